// A clip from the microphone, for models that read audio. The browser asks for the microphone only when the user
// presses Record (never at startup); MediaRecorder records in the browser's own format (WebM/Opus, Ogg/Opus), which
// the engine does not decode (WAV, MP3, FLAC), so the clip is decoded here and written again as a 16-bit PCM WAV.
import { wavFile } from '../core/wav.ts';

/** The rate clips are written at: what speech encoders (Whisper) read. The engine would resample any other. */
export const WAV_RATE = 16000;

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
