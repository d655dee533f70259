// The app's Record button: the microphone asked for only when it is pressed, recorded with MediaRecorder, turned into
// a 16 kHz mono 16-bit WAV in the page, attached and sent. Apart from app.spec.ts because Chromium needs launch
// options of its own here (its fake microphone, a beep, and its permission prompt answered yes), which Playwright
// sets per file; the name ends in app.spec.ts, so it runs with the app's tests (Chromium and Firefox, isolated page).
// Firefox runs on puppeteer-core with the fixture's launch options (no fake-device preference): there getUserMedia is
// given a Web Audio stream instead, which stays silent (headless, no audio device: the AudioContext never runs), so
// only Chromium's clip is checked for sound.
import config from '../playwright.config.ts';
import { testWav } from '../test/fixtures/media.ts';
import { PROJECTORS } from '../test/fixtures/projectors.ts';
import { APP_COMPOSER, b64, loadWithProjector, putFiles, sendAndWait, storedClips } from './attach.ts';
import { expect, test } from './fixtures.ts';
import type { Tab } from './site.ts';

const launch = config.use?.launchOptions ?? {};
test.use({
  launchOptions: {
    ...launch,
    args: [...(launch.args ?? []), '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream'],
  },
});

/** How often the page asked for the microphone, and how many of the tracks it got are still live. */
const mic = (tab: Tab) =>
  tab.evaluate(() => {
    const m = (window as unknown as { mic: { calls: number; streams: MediaStream[] } }).mic;
    return {
      calls: m.calls,
      live: m.streams.flatMap((s) => s.getTracks()).filter((t) => t.readyState === 'live').length,
    };
  });

test('a clip recorded from the microphone (asked for only on Record) is attached and sent as a WAV, beside an audio file', async ({
  site,
}) => {
  if (site.browser === 'firefox') {
    site.initScript(() => {
      navigator.mediaDevices.getUserMedia = async () => {
        const context = new AudioContext();
        const tone = context.createOscillator();
        const out = context.createMediaStreamDestination();
        tone.connect(out);
        tone.start();
        void context.resume();
        return out.stream;
      };
    });
  }
  site.initScript(() => {
    const calls = { calls: 0, streams: [] as MediaStream[] };
    (window as unknown as { mic: typeof calls }).mic = calls;
    const ask = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
    navigator.mediaDevices.getUserMedia = async (constraints) => {
      calls.calls++;
      const stream = await ask(constraints);
      calls.streams.push(stream);
      return stream;
    };
  });
  const tab = await site.tab('/');
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await loadWithProjector(
    tab,
    `/test-models/${PROJECTORS['qwen2a-audio'].model}.gguf`,
    '/test-models/qwen2a-audio.mmproj.gguf',
    'audio',
  );
  expect(await tab.visible('#record')).toBe(true);
  await putFiles(tab, APP_COMPOSER, 'input', [
    { name: 'note.wav', type: 'audio/wav', b64: b64(testWav(1.5, 16000, 1)) },
  ]);
  await expect.poll(() => tab.count('.pending .chip')).toBe(1);
  expect(await mic(tab)).toEqual({ calls: 0, live: 0 }); // not asked for at startup, nor for a file

  await tab.click('#record');
  await expect.poll(() => tab.texts('#record')).toEqual(['Stop recording']);
  expect(await tab.texts('#attach-status')).toEqual([expect.stringContaining('Recording')]);
  expect(await mic(tab)).toEqual({ calls: 1, live: 1 });
  expect(await tab.evaluate(() => (document.getElementById('send') as HTMLButtonElement).disabled)).toBe(true);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await tab.click('#record');
  await expect.poll(() => tab.count('.pending .chip')).toBe(2);
  await expect
    .poll(async () => (await tab.texts('.pending .chip'))[1])
    .toMatch(/^♪ recording-[\d-]+\.wav · \d+\.\d s$/);
  expect(await tab.texts('#record')).toEqual(['Record']);
  expect(await mic(tab)).toEqual({ calls: 1, live: 0 }); // the microphone let go

  await sendAndWait(tab, 'What do you hear?');
  expect(await tab.count('.msg.user .chip')).toBe(2);
  // Sent and kept: the file as it was, the recording as a 16 kHz mono 16-bit WAV with sound in it.
  const clips = await tab.evaluate(storedClips);
  expect(clips).toEqual([
    {
      name: 'note.wav',
      format: 'wav',
      riff: 'RIFFWAVE',
      channels: 1,
      rate: 16000,
      bits: 16,
      seconds: 1.5,
      sound: true,
    },
    {
      name: 'recording-T.wav',
      format: 'wav',
      riff: 'RIFFWAVE',
      channels: 1,
      rate: 16000,
      bits: 16,
      seconds: expect.any(Number),
      sound: site.browser === 'chromium' ? true : expect.any(Boolean),
    },
  ]);
  expect(clips[1]!.seconds).toBeGreaterThan(0.5);
});
