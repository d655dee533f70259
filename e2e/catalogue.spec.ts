// The app's model catalogue as a visitor meets it: every model with its download size (asked of the Hub) and whether it
// fits this device — on a simulated small device, the models that do not fit are refused with the reason and cannot
// be started — and the first run: the test model, served by a test Hub as a catalogue entry, downloaded with size,
// speed and time left, paused, resumed after a reload from where it stopped, and answering offline. Chromium and
// Firefox. The Hub is test/model-server.ts (the real one is on the internet); its sizes for the real catalogue's files
// are stand-ins of about their real size, served over one-byte files (nothing of them is downloaded).
import { mkdirSync, readFileSync } from 'node:fs';
import { modelPath } from '../test/helpers.ts';
import { ModelServer } from '../test/model-server.ts';
import { expect, test } from './fixtures.ts';
import type { Tab } from './site.ts';
import { TEST_ENTRY, TEST_HUB_PORT } from './test-hub.ts';

const catalogue = JSON.parse(readFileSync('src/app/catalogue.json', 'utf8')) as {
  models: Array<{ id: string; hf: { repo: string; file: string }; projector?: string }>;
};
const MB = 1e6;
/** About the real files' sizes (2026): what the test Hub says they are. */
const SIZES: Record<string, number[]> = {
  'smollm2-360m': [386 * MB],
  'qwen2.5-0.5b': [491 * MB],
  'gemma-3-1b': [806 * MB],
  'llama-3.2-1b': [808 * MB],
  'qwen2.5-1.5b': [1117 * MB],
  'smollm2-1.7b': [1056 * MB],
  'qwen3-1.7b': [1834 * MB],
  'qwen3-vl-2b': [1107 * MB, 819 * MB],
  'phi-3-mini': [2393 * MB],
  'llama-3.2-3b': [2020 * MB],
  'qwen2.5-3b': [2104 * MB],
  'qwen2.5-vl-3b': [1929 * MB, 1338 * MB],
  'gemma-3-4b-vision': [2489 * MB, 851 * MB],
  'qwen3-vl-4b': [2497 * MB, 836 * MB],
  'qwen3-4b': [2497 * MB],
  'qwen2.5-7b': [3993 * MB, 689 * MB],
  'llama-3.1-8b': [4921 * MB],
  'qwen3-8b': [5027 * MB],
};

let hub: ModelServer;

test.beforeAll(async () => {
  hub = await ModelServer.start(TEST_HUB_PORT);
  const tiny = new Uint8Array([0]);
  for (const m of catalogue.models) {
    const sizes = SIZES[m.id]!;
    const split = /-00001-of-(\d{5})\.gguf$/.exec(m.hf.file);
    const names = split
      ? sizes.map((_, i) => m.hf.file.replace('-00001-of-', `-${String(i + 1).padStart(5, '0')}-of-`))
      : [m.hf.file, ...(m.projector ? [m.projector] : [])];
    hub.addHub(m.hf.repo, 'main', Object.fromEntries(names.map((n, i) => [n, { bytes: tiny, size: sizes[i]! }])));
  }
  hub.addHub(TEST_ENTRY.hf.repo, 'main', { [TEST_ENTRY.hf.file]: { path: modelPath('qwen2-hello') } });
});

test.afterAll(async () => {
  await hub.stop();
});

const card = (id: string) => `.model-card[data-model="${id}"]`;

async function openCatalogue(tab: Tab) {
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await expect.poll(() => tab.count('.model-card')).toBe(catalogue.models.length + 1);
  await expect
    .poll(() => tab.texts(`${card('qwen2.5-7b')} .card-facts`))
    .toEqual([expect.stringContaining('download')]);
  await expect.poll(() => tab.texts('#device-line')).toEqual([expect.stringContaining('GB/s (measured)')]);
}

test('the catalogue: every model with its size from the Hub and whether it fits; on a small device (simulated: 2 GB of memory) the large ones are refused with the reason', async ({
  site,
}) => {
  // The boundary simulated: what the browser says of the device's memory (Chromium's navigator.deviceMemory; Firefox
  // has none, so this is the only way it can say 2 GB).
  site.initScript(() =>
    Object.defineProperty(Navigator.prototype, 'deviceMemory', { get: () => 2, configurable: true }),
  );
  const tab = await site.tab('/');
  await openCatalogue(tab);
  expect(await tab.visible('#first-run')).toBe(true);
  // Sizes as the Hub gave them (MiB, GiB), the projector's counted with the model's.
  expect(await tab.texts(`${card('qwen2.5-0.5b')} .card-facts`)).toEqual([
    expect.stringContaining(`${(491e6 / 1024 ** 2).toFixed(1)} MiB download`),
  ]);
  expect(await tab.texts(`${card('gemma-3-4b-vision')} .card-facts`)).toEqual([
    expect.stringContaining(`${((2489e6 + 851e6) / 1024 ** 3).toFixed(2)} GiB download`),
  ]);
  expect(await tab.texts(`${card('gemma-3-4b-vision')} .badge`)).toContain('Reads images');
  // Fits: the small ones, with memory, engine and speed; refused: everything over half of 2 GB, and the 7B for any
  // device (more than WebAssembly's 4 GiB), each with its reason, and its button disabled.
  const fitOf = async (id: string) => (await tab.texts(`${card(id)} .card-fit`))[0]!;
  expect(await fitOf('qwen2.5-0.5b')).toMatch(
    /^Fits: .* of memory at 4096 tokens of context · runs on the CPU · about \d+ tokens\/s/,
  );
  expect(await fitOf('gemma-3-1b')).toMatch(/^Does not fit this device: it needs .* this device has about 2 GB/);
  expect(await fitOf('qwen2.5-7b')).toMatch(
    /^Does not fit this device: its 4\.36 GiB of weights are more than the CPU engine holds .* it needs a GPU/,
  );
  const disabled = (id: string) =>
    tab.evaluate((sel) => (document.querySelector(`${sel} .card-go`) as HTMLButtonElement).disabled, card(id));
  expect(await disabled('gemma-3-1b')).toBe(true);
  expect(await disabled('qwen2.5-7b')).toBe(true);
  expect(await disabled('qwen2.5-0.5b')).toBe(false);
  // Clicking a refused model starts nothing: no download is asked of the Hub.
  const before = hub.log.length;
  await tab.evaluate(
    (sel) => (document.querySelector(`${sel} .card-go`) as HTMLButtonElement).click(),
    card('gemma-3-1b'),
  );
  await new Promise((r) => setTimeout(r, 500));
  expect(hub.log.slice(before).filter((e) => e.path.includes('/resolve/'))).toEqual([]);
  // One recommended: a model that fits.
  const recommended = await tab.evaluate(() =>
    [...document.querySelectorAll('.model-card')]
      .filter((c) => c.querySelector('.recommended'))
      .map((c) => (c as HTMLElement).dataset.model),
  );
  expect(recommended).toHaveLength(1);
  expect(await fitOf(recommended[0]!)).toMatch(/^Fits/);
  if (tab.playwright) {
    mkdirSync('docs', { recursive: true });
    await tab.playwright.screenshot({ path: 'docs/catalogue.png' });
    await tab.playwright.setViewportSize({ width: 390, height: 844 });
    await tab.playwright.screenshot({ path: 'docs/catalogue-phone.png' });
  }
});

test('with the Hub unreachable, each card says so and offers to ask again; a model whose estimated size fits can start', async ({
  site,
}) => {
  // Unreachable as behind a firewall that refuses it: nothing listens on the Hub's port.
  await hub.stop();
  let tab: Tab;
  try {
    tab = await site.tab('/');
    const facts = (id: string) => tab.texts(`${card(id)} .card-facts`);
    await expect
      .poll(() => facts('qwen2.5-0.5b'), { timeout: 30_000 })
      .toEqual([expect.stringContaining('size: the Hub could not be reached')]);
    expect(await tab.count(`${card('qwen2.5-0.5b')} .card-retry`)).toBe(1);
    // The fit from the parameter count and the quantization: the small model can start (its download learns the
    // size); the 7B is refused before any download.
    const fitOf = async (id: string) => (await tab.texts(`${card(id)} .card-fit`))[0]!;
    expect(await fitOf('qwen2.5-0.5b')).toMatch(
      /^Fits: about .* \(estimated from its parameters: the Hub gave no size\)/,
    );
    const disabled = (id: string) =>
      tab.evaluate((sel) => (document.querySelector(`${sel} .card-go`) as HTMLButtonElement).disabled, card(id));
    expect(await disabled('qwen2.5-0.5b')).toBe(false);
    expect(await fitOf('qwen2.5-7b')).toMatch(
      /^Does not fit this device: its about 3\.67 GiB of weights .* it needs a GPU/,
    );
    expect(await disabled('qwen2.5-7b')).toBe(true);
  } finally {
    await hub.listen();
  }
  // Back: asking again gives the sizes.
  await tab.click(`${card('qwen2.5-0.5b')} .card-retry`);
  await expect
    .poll(() => tab.texts(`${card('qwen2.5-0.5b')} .card-facts`))
    .toEqual([expect.stringContaining(`${(491e6 / 1024 ** 2).toFixed(1)} MiB download`)]);
  expect(await tab.count(`${card('qwen2.5-0.5b')} .card-retry`)).toBe(0);
});

test('first run: the test model from the catalogue downloads with size, speed and time left; cancel keeps nothing; pause, reload and resume go on from where it stopped; then it answers offline', async ({
  site,
}) => {
  hub.bytesPerSecond = 6 * MB; // the test model (~45 MB) takes seconds: long enough to pause
  try {
    const tab = await site.tab('/');
    await openCatalogue(tab);
    const test = card(TEST_ENTRY.id);
    const progress = async () => (await tab.texts(`${test} .card-progress`))[0] ?? '';
    // Cancel: what came is deleted.
    await tab.click(`${test} .card-go`);
    await expect.poll(progress).toMatch(/Downloading the model: .* MiB of .* MiB \(.* MiB\/s, .* left\)/);
    await tab.click(`${test} .card-cancel`);
    await expect.poll(() => tab.texts(`${test} .card-go`)).toEqual(['Download']);
    await tab.reload();
    await openCatalogue(tab);
    expect(await tab.texts(`${test} .card-go`)).toEqual(['Download']);

    // Pause after a fifth, reload, resume.
    await tab.click(`${test} .card-go`);
    await expect
      .poll(() =>
        tab.evaluate(
          (sel) => (document.querySelector(`${sel} progress`) as HTMLProgressElement | null)?.value ?? 0,
          test,
        ),
      )
      .toBeGreaterThan(0.2);
    await tab.click(`${test} .card-pause`);
    await expect.poll(() => tab.texts(`${test} .card-go`)).toEqual(['Resume download']);
    await tab.reload();
    await openCatalogue(tab);
    expect(await tab.texts(`${test} .card-go`)).toEqual(['Resume download']);
    expect(await progress()).toMatch(/^Paused: .* MiB \(\d+ %\) kept$/);
    const since = hub.log.length;
    await tab.click(`${test} .card-go`);
    await expect.poll(() => tab.texts('#load-status')).toEqual([expect.stringContaining('Ready')]);
    // The resumed download asked only for the rest of the file.
    const file = `/${TEST_ENTRY.hf.repo}/resolve/main/${TEST_ENTRY.hf.file}`;
    const gets = hub.log.slice(since).filter((e) => e.path === file && e.method === 'GET');
    expect(gets.length).toBeGreaterThan(0);
    expect(gets.every((e) => /^bytes=[1-9]\d*-/.test(e.range ?? ''))).toBe(true);
    expect(await tab.visible('#catalogue')).toBe(false); // the chat takes the room

    // Offline, on the next visit: the service worker serves the app, the model opens from the store and answers.
    await tab.evaluate(() => navigator.serviceWorker.ready.then(() => {}));
    await expect.poll(() => tab.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
    await site.offline(true);
    await tab.reload();
    await openCatalogue(tab);
    expect(await tab.visible('#first-run')).toBe(false);
    expect(await tab.texts(`${test} .card-go`)).toEqual(['Chat']);
    await tab.click(`${test} .card-go`);
    await expect.poll(() => tab.texts('#load-status')).toEqual([expect.stringContaining('Ready')]);
    await tab.fill('#prompt', 'Are you there?');
    await tab.press('#prompt', 'Enter');
    await expect.poll(async () => (await tab.texts('.msg.assistant')).at(-1)).toBe('Hello, world!');
  } finally {
    hub.bytesPerSecond = null;
    await site.offline(false);
  }
});
