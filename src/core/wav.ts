// Decoded audio (an AudioBuffer: the app's microphone, the Prompt API's audio values) as a file the engine reads: the
// engine decodes WAV, MP3 and FLAC, not the browser's recording formats.

/** The samples as a mono 16-bit PCM WAV file (the channels averaged). */
export function wavFile(audio: AudioBuffer): Blob {
  const n = audio.length;
  const d = new DataView(new ArrayBuffer(44 + 2 * n));
  const ascii = (at: number, s: string) => [...s].forEach((c, k) => d.setUint8(at + k, c.charCodeAt(0)));
  ascii(0, 'RIFF');
  d.setUint32(4, 36 + 2 * n, true);
  ascii(8, 'WAVEfmt ');
  d.setUint32(16, 16, true); // the fmt chunk's size
  d.setUint16(20, 1, true); // PCM
  d.setUint16(22, 1, true); // mono
  d.setUint32(24, audio.sampleRate, true);
  d.setUint32(28, 2 * audio.sampleRate, true); // bytes a second
  d.setUint16(32, 2, true); // bytes a frame
  d.setUint16(34, 16, true); // bits a sample
  ascii(36, 'data');
  d.setUint32(40, 2 * n, true);
  const channels = Array.from({ length: audio.numberOfChannels }, (_, c) => audio.getChannelData(c));
  for (let i = 0; i < n; i++) {
    let v = 0;
    for (const ch of channels) v += ch[i]!;
    v = Math.max(-1, Math.min(1, v / channels.length));
    d.setInt16(44 + 2 * i, v < 0 ? v * 0x8000 : v * 0x7fff, true);
  }
  return new Blob([d.buffer], { type: 'audio/wav' });
}
