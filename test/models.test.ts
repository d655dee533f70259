// The model store in Node (a folder), against a local server that plays the network and the Hugging Face Hub (the
// real one is on the internet): downloads kept and loaded again without the network, progress, sha256 checks, split
// models, resumed downloads, servers without range requests, bad files refused, list/usage/delete. The browser's OPFS
// store runs the same code; e2e/models.spec.ts checks it in Chromium.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortError, ModelLoadError } from '../src/errors.ts';
import { createNodeEngine, type NodeEngine } from '../src/node.ts';
import type { ModelSource, Progress } from '../src/types.ts';
import { ensureSplitModel } from './fixtures/split.ts';
import { modelPath, NO_CACHE, trackEngines } from './helpers.ts';
import { ModelServer } from './model-server.ts';

let server: ModelServer;
const dirs: string[] = [];
const track = trackEngines();
const tiny = modelPath('qwen2-tiny');
const MESSAGES = [{ role: 'user' as const, content: 'Tell me about bread.' }];

beforeAll(async () => {
  server = await ModelServer.start();
});

afterAll(async () => {
  await server.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'hearth-models-'));
  dirs.push(d);
  return d;
};

const engineOver = (modelsDir: string, maxModelBytes?: number) =>
  track(createNodeEngine({ modelsDir, cache: NO_CACHE, hfEndpoint: server.url, maxModelBytes }));

async function load(engine: NodeEngine, source: ModelSource, signal?: AbortSignal) {
  const events: Progress[] = [];
  await engine.load(source, { nCtx: 512, signal, onProgress: (p) => events.push(p) });
  return events;
}

const answer = async (engine: NodeEngine) =>
  (await engine.chat.completions.create({ messages: MESSAGES, max_tokens: 8, temperature: 0 })).choices[0]!.message
    .content;

let reference: string | null = null;
/** What the model answers when loaded straight from disk. */
async function referenceAnswer() {
  if (reference === null) {
    const e = await track(createNodeEngine({ modelsDir: null, cache: NO_CACHE }));
    await e.load({ path: tiny }, { nCtx: 512 });
    reference = await answer(e);
    await e.unload();
  }
  return reference;
}

describe('model store (Node: a folder)', () => {
  it('downloads a { hf } model once with progress and a sha256 check, then loads it from the store with the server gone', async () => {
    server.addHub('test/tiny', 'main', { 'tiny.gguf': { path: tiny } });
    const dir = newDir();
    const source = { hf: { repo: 'test/tiny', file: 'tiny.gguf' } };
    const first = await engineOver(dir);
    const events = await load(first, source);
    const size = statSync(tiny).size;
    const downloads = events.filter((e) => e.phase === 'download');
    expect(downloads.at(-1)).toMatchObject({ loaded: size, total: size });
    expect(downloads.every((e, i) => i === 0 || e.loaded >= downloads[i - 1]!.loaded)).toBe(true);
    expect(downloads.some((e) => (e.bytesPerSecond ?? 0) > 0)).toBe(true);
    expect(events.filter((e) => e.phase === 'verify').at(-1)).toMatchObject({ loaded: size, total: size });
    expect(events.findIndex((e) => e.phase === 'verify')).toBeGreaterThan(
      events.findIndex((e) => e.phase === 'download'),
    );
    expect(await answer(first)).toBe(await referenceAnswer());
    expect(await first.models.list()).toEqual([
      expect.objectContaining({
        id: `${server.url}/test/tiny/resolve/main/tiny.gguf`,
        name: 'tiny.gguf',
        size,
        downloaded: size,
        complete: true,
        verified: true,
      }),
    ]);

    const requests = server.log.length;
    await server.stop();
    try {
      const second = await engineOver(dir);
      const again = await load(second, source);
      expect(again.map((e) => e.phase)).not.toContain('download');
      expect(await answer(second)).toBe(await referenceAnswer());
    } finally {
      await server.listen();
    }
    expect(server.log.length).toBe(requests);
  });

  it('loads a split model (three files) as one model that answers as the whole file does', async () => {
    const parts = await ensureSplitModel('qwen2-tiny', 3);
    server.addHub('test/split', 'main', Object.fromEntries(parts.map((p) => [p.split('/').pop()!, { path: p }])));
    const engine = await engineOver(newDir());
    await load(engine, { hf: { repo: 'test/split', file: parts[0]!.split('/').pop()! } });
    const [stored] = await engine.models.list();
    expect(stored!.files.map((f) => f.name)).toEqual(parts.map((p) => p.split('/').pop()));
    expect(stored!.complete).toBe(true);
    expect(await answer(engine)).toBe(await referenceAnswer());
  });

  it('resumes an interrupted download where it stopped', async () => {
    const url = server.add('/slow/tiny.gguf', { path: tiny });
    const size = statSync(tiny).size;
    const engine = await engineOver(newDir());
    server.bytesPerSecond = 8 << 20;
    const stop = new AbortController();
    let seen = 0;
    await expect(
      engine.load(url, {
        nCtx: 512,
        signal: stop.signal,
        onProgress: (p) => {
          seen = p.loaded;
          if (p.phase === 'download' && p.loaded > size * 0.4) stop.abort();
        },
      }),
    ).rejects.toBeInstanceOf(AbortError);
    const [partial] = await engine.models.list();
    expect(partial!.complete).toBe(false);
    expect(partial!.downloaded).toBeGreaterThan(size * 0.3);
    const sentBefore = server.sent('/slow/tiny.gguf');

    server.bytesPerSecond = null;
    const events = await load(engine, url);
    expect(events.find((e) => e.phase === 'download')!.loaded).toBe(partial!.downloaded);
    // Only what was missing came again (give or take the pieces in flight when it stopped).
    expect(server.sent('/slow/tiny.gguf') - sentBefore).toBeLessThan(size - partial!.downloaded + (1 << 20));
    expect(seen).toBeGreaterThan(0);
    expect(await answer(engine)).toBe(await referenceAnswer());
  });

  it('downloads from a server that ignores range requests', async () => {
    const url = server.add('/plain/tiny.gguf', { path: tiny, noRanges: true });
    const engine = await engineOver(newDir());
    await load(engine, url);
    expect(
      server.log.filter((e) => e.path === '/plain/tiny.gguf' && e.method === 'GET').map((e) => e.status),
    ).toContain(200);
    expect(await answer(engine)).toBe(await referenceAnswer());
  });

  it('refuses a file shorter than announced and one whose sha256 differs, and keeps neither', async () => {
    const size = statSync(tiny).size;
    server.addHub('test/short', 'main', { 'tiny.gguf': { path: tiny, size: size + 4096 } });
    server.addHub('test/damaged', 'main', { 'tiny.gguf': { path: tiny, sha256: 'ab'.repeat(32) } });
    const engine = await engineOver(newDir());
    await expect(load(engine, { hf: { repo: 'test/short', file: 'tiny.gguf' } })).rejects.toMatchObject({
      name: 'ModelLoadError',
      code: 'size_mismatch',
    });
    await expect(load(engine, { hf: { repo: 'test/damaged', file: 'tiny.gguf' } })).rejects.toMatchObject({
      name: 'ModelLoadError',
      code: 'checksum_mismatch',
    });
    expect((await engine.models.list()).filter((m) => m.complete)).toEqual([]);
    expect((await engine.models.list()).map((m) => m.id)).not.toContain(
      `${server.url}/test/damaged/resolve/main/tiny.gguf`,
    );
    // The engine goes on.
    await load(engine, { path: tiny });
    expect(await answer(engine)).toBe(await referenceAnswer());
  });

  it('lists, measures and deletes stored models', async () => {
    const url = server.add('/list/tiny.gguf', { path: tiny });
    const engine = await engineOver(newDir());
    expect(await engine.models.list()).toEqual([]);
    await load(engine, url);
    const usage = await engine.models.usage();
    expect(usage.models).toBe(statSync(tiny).size);
    expect(usage.quota).toBeGreaterThan(0);
    expect(await engine.models.delete(url)).toBe(true);
    expect(await engine.models.delete(url)).toBe(false);
    expect(await engine.models.list()).toEqual([]);
    expect((await engine.models.usage()).models).toBe(0);
  });

  it('a web page where the model should be is stopped at its first bytes and nothing is kept; the real file loads later', async () => {
    // A typo'd URL on a host that answers every path with its index.html.
    const page = new TextEncoder().encode(
      `<!DOCTYPE html><html><body>${'<p>Welcome to our site.</p>'.repeat(120_000)}</body></html>`,
    );
    const url = server.add('/site/model.gguf', { bytes: page });
    const engine = await engineOver(newDir());
    const err = await load(engine, url).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ModelLoadError', code: 'not_gguf' });
    expect((err as Error).message).toMatch(/web page/);
    expect(server.sent('/site/model.gguf')).toBeLessThan(page.length / 2); // not downloaded in full
    expect(await engine.models.list()).toEqual([]);
    // Once the real file is there, the next load asks the server again and gets it.
    server.add('/site/model.gguf', { path: tiny });
    await load(engine, url);
    expect(await answer(engine)).toBe(await referenceAnswer());
  });

  it('a model over the size limit is refused before its download, from the size the server announces', async () => {
    const url = server.add('/big/tiny.gguf', { path: tiny });
    const engine = await engineOver(newDir(), statSync(tiny).size - 1);
    await expect(load(engine, url)).rejects.toMatchObject({ name: 'ModelLoadError', code: 'too_large' });
    expect(server.log.filter((e) => e.path === '/big/tiny.gguf').map((e) => e.method)).toEqual(['HEAD']);
    expect(await engine.models.list()).toEqual([]);
  });

  it('a file that fails its checks after the download (a GGUF cut short) is deleted, not kept as complete', async () => {
    const cut = readFileSync(tiny).subarray(0, statSync(tiny).size >> 1);
    const url = server.add('/cut/tiny.gguf', { bytes: cut });
    const engine = await engineOver(newDir());
    await expect(load(engine, url)).rejects.toMatchObject({ name: 'ModelLoadError', code: 'truncated' });
    expect(await engine.models.list()).toEqual([]);
  });

  it('a sha256 the Hub cannot give is a typed error, unless the caller allows an unverified model', async () => {
    server.addHub('test/busy', 'main', { 'tiny.gguf': { path: tiny } });
    const engine = await engineOver(newDir());
    const source = { hf: { repo: 'test/busy', file: 'tiny.gguf' } };
    for (const status of [429, 503]) {
      server.hubStatus = status;
      await expect(load(engine, source)).rejects.toMatchObject({
        name: 'ModelLoadError',
        code: 'checksum_unavailable',
        details: { retryable: true },
      });
    }
    expect(await engine.models.list()).toEqual([]);
    await engine.load(source, { nCtx: 512, allowUnverified: true });
    server.hubStatus = null;
    expect(await engine.models.list()).toEqual([expect.objectContaining({ complete: true, verified: false })]);
    expect(await answer(engine)).toBe(await referenceAnswer());
  });

  it('a stored record is used only when valid and its own: a foreign or damaged one is deleted and the model fetched again', async () => {
    const url = server.add('/records/tiny.gguf', { path: tiny });
    const dir = newDir();
    const engine = await engineOver(dir);
    await load(engine, url);
    const [folder] = readdirSync(dir);
    expect(folder).toMatch(/^s-[0-9a-f]{64}$/); // the sha256 of the id
    const metaFile = join(dir, folder!, 'meta.json');
    const meta = JSON.parse(readFileSync(metaFile, 'utf8'));
    const tampered = [
      { ...meta, id: `${server.url}/another/model.gguf` }, // another model's record in this folder
      { ...meta, parts: [{ ...meta.parts[0], name: '../../escape.gguf' }] }, // a path, not a file name
      { ...meta, parts: [{ ...meta.parts[0], hash: null }] }, // complete, but without its identity
    ];
    for (const record of tampered) {
      writeFileSync(metaFile, JSON.stringify(record));
      const before = server.sent('/records/tiny.gguf');
      await load(engine, url);
      expect(server.sent('/records/tiny.gguf') - before).toBe(statSync(tiny).size);
      expect(await answer(engine)).toBe(await referenceAnswer());
    }
  });

  it('a missing file is an http_error that names it; a bad source is invalid_source', async () => {
    const engine = await engineOver(newDir());
    await expect(load(engine, `${server.url}/nothing/here.gguf`)).rejects.toMatchObject({
      code: 'http_error',
      details: { status: 404 },
    });
    await expect(load(engine, { hf: { repo: 'test/tiny', file: 'other.gguf' } })).rejects.toSatisfy(
      (e: unknown) => e instanceof ModelLoadError && e.code === 'http_error' && /other\.gguf/.test(e.message),
    );
    await expect(load(engine, { hf: { repo: 'no repo', file: 'x.gguf' } })).rejects.toMatchObject({
      code: 'invalid_source',
    });
    await expect(
      load(engine, { hf: { repo: 'test/tiny', file: 'x.gguf', endpoint: 'ftp://mirror' } }),
    ).rejects.toMatchObject({
      code: 'invalid_source',
    });
  });

  it("a { hf } source's own endpoint (a mirror) is used for its file list and download, not the engine's", async () => {
    server.addHub('test/mirrored', 'main', { 'tiny.gguf': { path: tiny } });
    const dir = newDir();
    // The engine's own endpoint answers nothing: every request must go to the source's.
    const engine = await track(createNodeEngine({ modelsDir: dir, cache: NO_CACHE, hfEndpoint: 'http://127.0.0.1:9' }));
    const before = server.log.length;
    await load(engine, { hf: { repo: 'test/mirrored', file: 'tiny.gguf', endpoint: server.url } });
    expect(await answer(engine)).toBe(await referenceAnswer());
    expect(server.log.slice(before).map((r) => r.path)).toEqual(
      expect.arrayContaining(['/api/models/test/mirrored/tree/main', '/test/mirrored/resolve/main/tiny.gguf']),
    );
    expect((await engine.models.list())[0]!.id).toBe(`${server.url}/test/mirrored/resolve/main/tiny.gguf`);
  });
});

describe('a { hf } model with projector: true', () => {
  it("takes the repo's mmproj*.gguf (f16 first) through the model store, and says so when there is none", async () => {
    const { ensureMultimodal } = await import('./fixtures/projectors.ts');
    const { model, mmproj } = await ensureMultimodal('gemma3-vision');
    server.addHub('test/vision', 'main', {
      'model.gguf': { path: model },
      'mmproj-model-q8_0.gguf': { path: mmproj },
      'mmproj-model-f16.gguf': { path: mmproj },
    });
    const engine = await engineOver(newDir());
    await engine.load({ hf: { repo: 'test/vision', file: 'model.gguf' } }, { nCtx: 512, projector: true });
    expect((await engine.info()).input).toEqual(['text', 'image']);
    expect(server.log.some((e) => e.path.endsWith('/mmproj-model-f16.gguf'))).toBe(true);
    expect(server.log.some((e) => e.path.endsWith('/mmproj-model-q8_0.gguf'))).toBe(false);
    server.addHub('test/plain', 'main', { 'model.gguf': { path: model } });
    await expect(
      engine.load({ hf: { repo: 'test/plain', file: 'model.gguf' } }, { nCtx: 512, projector: true }),
    ).rejects.toMatchObject({ name: 'ModelLoadError', code: 'invalid_projector' });
  });
});
