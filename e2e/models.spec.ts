// The model store in the browser (OPFS, in the engine's worker), against a local server that plays the network and
// the Hugging Face Hub (test/model-server.ts; no internet here): progress, a reload that loads from the store with the
// server stopped, split models, a download resumed after a reload, bad files refused (a web page at its first bytes),
// a quota error (Chromium's real quota, lowered through the DevTools protocol), list and delete. Chromium and Firefox,
// on the cross-origin isolated page only: the store does not depend on threads.
import { statSync } from 'node:fs';
import { ensureSplitModel } from '../test/fixtures/split.ts';
import { modelPath } from '../test/helpers.ts';
import { ModelServer } from '../test/model-server.ts';
import type { ModelSource, Progress, StoredModel } from '../src/types.ts';
import { expect, test } from './fixtures.ts';
import type { Tab } from './site.ts';

type Page = Tab;

let server: ModelServer;
const tiny = modelPath('qwen2-tiny');
const size = () => statSync(tiny).size;

test.beforeAll(async () => {
  server = await ModelServer.start();
  server.addHub('test/tiny', 'main', { 'tiny.gguf': { path: tiny } });
});

test.afterAll(async () => {
  await server.stop();
});

async function openEngine(page: Page) {
  await page.goto('/e2e/harness.html');
  await page.waitFor(() => window.hearthReady);
  await page.evaluate(async (hfEndpoint) => {
    window.engine = await window.hearth.createEngine({ threads: 2, hfEndpoint, cache: { persistent: false } });
  }, server.url);
}

interface Loaded {
  events?: Progress[];
  answer?: string | null;
  error?: { name: string; code: string; message: string; details: Record<string, unknown> };
  list: StoredModel[];
}

/** Loads `source` in the page and asks one greedy question; a failed load comes back as `error`. */
function load(page: Page, source: ModelSource, options: { store?: boolean } = {}): Promise<Loaded> {
  return page.evaluate(
    async ({ source, options }) => {
      const events: Progress[] = [];
      try {
        await window.engine.load(source, { ...options, nCtx: 512, onProgress: (p) => events.push(p) });
      } catch (err) {
        const e = err as { name: string; code: string; message: string; details: Record<string, unknown> };
        return {
          error: { name: e.name, code: e.code, message: e.message, details: e.details },
          list: await window.engine.models.list(),
        };
      }
      const reply = await window.engine.chat.completions.create({
        messages: [{ role: 'user', content: 'Tell me about bread.' }],
        max_tokens: 8,
        temperature: 0,
      });
      return { events, answer: reply.choices[0]!.message.content, list: await window.engine.models.list() };
    },
    { source, options },
  );
}

/** The model's answer loaded from the site, kept in memory (not through the store). */
const reference = async (page: Page) => (await load(page, '/test-models/qwen2-tiny.gguf', { store: false })).answer;

test('downloads into the store with progress and a sha256 check; after a reload it loads from there with the server stopped', async ({
  site,
}) => {
  const page = await site.tab();
  await openEngine(page);
  const first = await load(page, { hf: { repo: 'test/tiny', file: 'tiny.gguf' } });
  const downloads = first.events!.filter((e) => e.phase === 'download');
  expect(downloads.at(-1)).toMatchObject({ loaded: size(), total: size() });
  expect(downloads.some((e) => (e.bytesPerSecond ?? 0) > 0)).toBe(true);
  expect(first.events!.filter((e) => e.phase === 'verify').at(-1)).toMatchObject({ loaded: size(), total: size() });
  expect(first.events!.at(-1)).toMatchObject({ phase: 'load', loaded: size() });
  expect(first.list).toEqual([
    expect.objectContaining({ name: 'tiny.gguf', size: size(), complete: true, verified: true }),
  ]);
  expect(first.answer).toBe(await reference(page));
  const usage = await page.evaluate(() => window.engine.models.usage());
  expect(usage.models).toBe(size());
  expect(typeof usage.persisted).toBe('boolean'); // requested on load; headless Chromium answers false
  expect((await page.evaluate(() => window.engine.info())).storage).toBe('opfs');

  await server.stop();
  try {
    await page.reload();
    await openEngine(page);
    const again = await load(page, { hf: { repo: 'test/tiny', file: 'tiny.gguf' } });
    expect(again.error).toBeUndefined();
    expect(again.events!.map((e) => e.phase)).not.toContain('download');
    expect(again.answer).toBe(first.answer);
  } finally {
    await server.listen();
  }
});

test('loads a split model (three files) as one, answering as the whole file does', async ({ site }) => {
  const page = await site.tab();
  const parts = await ensureSplitModel('qwen2-tiny', 3);
  const urls = parts.map((p) => server.add(`/split/${p.split('/').pop()}`, { path: p }));
  await openEngine(page);
  const split = await load(page, urls[0]!);
  expect(split.error).toBeUndefined();
  expect(split.list[0]!.files.map((f) => f.name)).toEqual(parts.map((p) => p.split('/').pop()));
  expect(split.answer).toBe(await reference(page));
});

test('a split model picked as local files, in any order, loads as one; a part left out is named', async ({ site }) => {
  const page = await site.tab();
  const parts = await ensureSplitModel('qwen2-tiny', 3);
  const urls = parts.map((p) => server.add(`/split/${p.split('/').pop()}`, { path: p }));
  await openEngine(page);
  const picked = await page.evaluate(async (urls) => {
    // What a file input with `multiple` gives: Files named as the parts.
    const files = await Promise.all(
      urls.map(async (u) => new File([await (await fetch(u)).blob()], u.split('/').pop()!)),
    );
    const refused = await window.engine.load(files.slice(1), { nCtx: 512 }).then(
      () => null,
      (e) => ({ name: e.name, code: e.code, missing: e.details.missing }),
    );
    await window.engine.load([...files].reverse(), { nCtx: 512 });
    const reply = await window.engine.chat.completions.create({
      messages: [{ role: 'user', content: 'Tell me about bread.' }],
      max_tokens: 8,
      temperature: 0,
    });
    return { refused, answer: reply.choices[0]!.message.content, stored: await window.engine.models.list() };
  }, urls);
  expect(picked.refused).toEqual({
    name: 'ModelLoadError',
    code: 'invalid_source',
    missing: [parts[0]!.split('/').pop()],
  });
  expect(picked.answer).toBe(await reference(page));
  expect(picked.stored).toEqual([]); // a local file is read where it is, not copied into the store
});

test('a download cut off by a reload resumes where it stopped', async ({ site }) => {
  const page = await site.tab();
  const path = '/slow/tiny.gguf';
  const url = server.add(path, { path: tiny });
  server.bytesPerSecond = 3 << 20;
  await openEngine(page);
  await page.evaluate((u) => {
    (window as unknown as { seen: number }).seen = 0;
    void window.engine
      .load(u, { onProgress: (p) => void ((window as unknown as { seen: number }).seen = p.loaded) })
      .catch(() => {});
  }, url);
  await page.waitFor((half) => (window as unknown as { seen: number }).seen > half, size() / 2);
  await sleep(1200); // the store saves its progress every second
  await page.reload(); // the worker goes, mid-download
  await sleep(2000); // until it is gone: it may start a request or two while it is torn down
  const since = server.log.length;
  server.bytesPerSecond = null;
  await openEngine(page);
  const resumed = await load(page, url);
  const start = resumed.events!.find((e) => e.phase === 'download')!.loaded;
  expect(start).toBeGreaterThan(size() / 2);
  expect(server.sent(path, since)).toBeLessThanOrEqual(size() - start);
  expect(resumed.answer).toBe(await reference(page));
});

test('refuses a short file, a wrong sha256 and a web page, saying why and keeping none; lists and deletes', async ({
  site,
}) => {
  server.addHub('test/short', 'main', { 'tiny.gguf': { path: tiny, size: size() + 4096 } });
  server.addHub('test/damaged', 'main', { 'tiny.gguf': { path: tiny, sha256: 'ab'.repeat(32) } });
  const page = await site.tab();
  await openEngine(page);
  const short = await load(page, { hf: { repo: 'test/short', file: 'tiny.gguf' } });
  expect(short.error).toMatchObject({ name: 'ModelLoadError', code: 'size_mismatch' });
  const damaged = await load(page, { hf: { repo: 'test/damaged', file: 'tiny.gguf' } });
  expect(damaged.error).toMatchObject({ name: 'ModelLoadError', code: 'checksum_mismatch' });
  // A typo'd URL on a host that answers it with its home page: stopped at the first bytes.
  const page404 = server.add('/site/typo.gguf', {
    bytes: new TextEncoder().encode(`<!doctype html>${'<p>home</p>'.repeat(300_000)}`),
  });
  const html = await load(page, page404);
  expect(html.error).toMatchObject({ name: 'ModelLoadError', code: 'not_gguf' });
  expect(server.sent('/site/typo.gguf')).toBeLessThan(2 << 20);
  expect(html.list).toEqual([]);

  const ok = await load(page, { hf: { repo: 'test/tiny', file: 'tiny.gguf' } });
  expect(ok.list.filter((m) => m.complete).map((m) => m.name)).toEqual(['tiny.gguf']);
  const id = ok.list.find((m) => m.complete)!.id;
  const after = await page.evaluate(
    async (i) => [await window.engine.models.delete(i), await window.engine.models.list()] as const,
    id,
  );
  expect(after[0]).toBe(true);
  expect(after[1].map((m) => m.id)).not.toContain(id);
});

test('a download over the quota says how much is needed, and keeps what it has to resume (Chromium: its quota lowered through the DevTools protocol)', async ({
  site,
  baseURL,
}) => {
  test.skip(
    site.browser !== 'chromium',
    "lowers the origin's quota through the DevTools protocol, which only Chromium has",
  );
  const page = await site.tab();
  await openEngine(page);
  // Chromium's own quota for this origin, lowered below the model's size: writes past it fail. (Its
  // navigator.storage.estimate() does not show the lowered quota, so the store's check before downloading, which
  // reads the estimate, cannot be tried this way: the write failure is.)
  const cdp = await page.playwright!.context().newCDPSession(page.playwright!);
  const origin = new URL(baseURL!).origin;
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 8 << 20 });
  const full = await load(page, { hf: { repo: 'test/tiny', file: 'tiny.gguf' } });
  expect(full.error).toMatchObject({ name: 'ModelLoadError', code: 'quota_exceeded', details: { free: 0 } });
  expect(full.error!.details.needed).toBeGreaterThan(size() - (8 << 20));
  expect(full.error!.message).toMatch(/needs [\d.]+ MiB more storage, but this site has 0\.0 MiB free/);
  expect(full.list[0]).toMatchObject({ complete: false }); // kept, to resume once there is room
  await cdp.send('Storage.overrideQuotaForOrigin', { origin });
  const ok = await load(page, { hf: { repo: 'test/tiny', file: 'tiny.gguf' } });
  expect(ok.list.filter((m) => m.complete).map((m) => m.name)).toEqual(['tiny.gguf']);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
