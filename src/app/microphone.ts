// A clip from the microphone, for models that read audio. The browser asks for the microphone only when the user
// presses Record (never at startup); MediaRecorder records in the browser's own format (WebM/Opus, Ogg/Opus), which
// the engine does not decode (WAV, MP3, FLAC), so the clip is decoded here and written again as a 16-bit PCM WAV.

/** The rate clips are written at: what speech encoders (Whisper) read. The engine would resample any other. */
export const WAV_RATE = 16000;

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

/** A recording in any format the browser decodes, as a WAV file at WAV_RATE. */
export async function toWav(recorded: Blob): Promise<Blob> {
  // An offline context decodes without an audio device or a user gesture, and resamples to its own rate.
  const audio = await new OfflineAudioContext(1, 1, WAV_RATE).decodeAudioData(await recorded.arrayBuffer());
  return wavFile(audio);
}

/** One recording at a time: start() asks for the microphone, stop() gives the clip as a WAV File. */
export class Microphone {
  #recorder: MediaRecorder | null = null;
  #done: Promise<Blob> | null = null;

  get recording(): boolean {
    return this.#recorder !== null;
  }

  async start(): Promise<void> {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    // The microphone is let go when the recording ends, or fails to start: the browser's indicator goes off.
    const release = () => stream.getTracks().forEach((t) => t.stop());
    try {
      const chunks: Blob[] = [];
      const recorder = new MediaRecorder(stream);
      this.#done = new Promise<Blob>((resolve, reject) => {
        recorder.ondataavailable = (e) => void (e.data.size && chunks.push(e.data));
        recorder.onerror = (e) => reject((e as ErrorEvent).error ?? new Error('the recording failed'));
        recorder.onstop = () => resolve(new Blob(chunks, { type: recorder.mimeType }));
      }).finally(release);
      recorder.start();
      this.#recorder = recorder;
    } catch (err) {
      release();
      throw err;
    }
  }

  async stop(): Promise<File> {
    const recorder = this.#recorder;
    if (!recorder) throw new Error('not recording');
    this.#recorder = null;
    recorder.stop();
    const wav = await toWav(await this.#done!);
    const time = new Date().toTimeString().slice(0, 8).replaceAll(':', '-');
    return new File([wav], `recording-${time}.wav`, { type: 'audio/wav' });
  }
}
