// Prompt state files (engine.cache.exportPrompt, `hearth prompt-state`, LoadOptions.promptState): a state written
// once answers like a cold engine, on every memory kind; a file that does not fit — another model, quantization,
// llama.cpp build or system prompt, cut short or damaged — is never restored, and says why.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  blobReader,
  LLAMA_STATE_SEQ_VERSION,
  readPromptStateHeader,
  writePromptState,
} from '../src/backends/llamacpp/prompt-state/file-format.ts';
import { createNodeEngine } from '../src/node.ts';
import type { ChatMessage, LoadOptions } from '../src/types.ts';
import { llamaSource } from '../scripts/llama-source.mjs';
import type { ModelName } from './fixtures/models.ts';
import { ask, coldEngine, expectSameAnswer, modelPath, NO_CACHE, SYSTEM, testEngine, trackEngines } from './helpers.ts';
import { ModelServer } from './model-server.ts';

const track = trackEngines();
const system: ChatMessage = { role: 'system', content: SYSTEM };
const question = (q: string): ChatMessage[] => [system, { role: 'user', content: q }];

/** The state of SYSTEM for `model`, written by an engine that caches nothing else. */
async function exported(model: ModelName, load: Omit<LoadOptions, 'signal' | 'onProgress'> = {}): Promise<Blob> {
  const engine = await track(testEngine(model, { ...NO_CACHE, nCtx: 2048, ...load }));
  return engine.cache.exportPrompt({ messages: [system] });
}

/** An engine loaded with a prompt state, caching nothing of its own (so every cached token is the shipped state's). */
const shippedEngine = (
  model: ModelName,
  promptState: Blob | string,
  load: Omit<LoadOptions, 'signal' | 'onProgress'> = {},
) => track(testEngine(model, { ...NO_CACHE, nCtx: 2048, promptState, ...load }));

/** The same file with its header changed (the state bytes kept). */
async function withHeader(file: Blob, change: Record<string, unknown>): Promise<Blob> {
  const { header, offset } = await readPromptStateHeader(blobReader(file));
  const data = new Uint8Array(await file.slice(offset).arrayBuffer());
  return writePromptState({ ...header, ...change } as Parameters<typeof writePromptState>[0], data);
}

describe('prompt state files', () => {
  it('names the state format version of the pinned llama.cpp', () => {
    const h = readFileSync(join(llamaSource().dir, 'include', 'llama.h'), 'utf8');
    expect(Number(/#define LLAMA_STATE_SEQ_VERSION (\d+)/.exec(h)?.[1])).toBe(LLAMA_STATE_SEQ_VERSION);
  });

  it.each(['qwen2-hello', 'llama3-hello', 'gemma3-hello', 'mamba-hello', 'qwen35-hello'] as const)(
    '%s answers from a shipped state like a cold engine, without reading the system prompt',
    async (model) => {
      const file = await exported(model);
      const { header } = await readPromptStateHeader(blobReader(file));
      const engine = await shippedEngine(model, file);
      const info = (await engine.info()).model!;
      expect(info.promptState).toEqual({ tokens: header.tokens.length, bytes: header.bytes });
      expect(info.warnings ?? []).toEqual([]);
      for (const q of ['Name a bread.', 'And a river?']) {
        const r = await ask(engine, question(q));
        expect(r.timings.cache_source).toBe('prompt-state');
        expect(r.usage.prompt_tokens_details.cached_tokens).toBe(header.tokens.length);
        expect(r.warnings).toBeUndefined();
        expectSameAnswer(r, await ask(await track(coldEngine(model)), question(q)));
      }
    },
  );

  it('writes an f16 state at half the size, and a model loaded with it takes its KV types', async () => {
    const f32 = await exported('qwen2-hello');
    const f16 = await exported('qwen2-hello', { cacheTypeK: 'f16', cacheTypeV: 'f16' });
    const h32 = (await readPromptStateHeader(blobReader(f32))).header;
    const h16 = (await readPromptStateHeader(blobReader(f16))).header;
    expect(h16.tokens).toEqual(h32.tokens);
    expect(h16.bytes / h32.bytes).toBeGreaterThan(0.45);
    expect(h16.bytes / h32.bytes).toBeLessThan(0.55);
    const engine = await shippedEngine('qwen2-hello', f16);
    expect((await engine.info()).kvCache).toMatchObject({ typeK: 'f16', typeV: 'f16' });
    expect((await ask(engine, question('Name a bread.'))).timings.cache_source).toBe('prompt-state');
  });

  describe('a file that does not fit is not used, and the load says why', () => {
    let file: Blob;
    beforeAll(async () => {
      file = await exported('qwen2-hello');
    });

    it.each([
      ['another model', 'qwen2-tiny', () => file, /another model file/],
      ['another quantization of the model', 'qwen2-hello-q8', () => file, /another model file/],
      [
        'another llama.cpp build',
        'qwen2-hello',
        () => withHeader(file, { llama: 'b9999+0123456789ab' }),
        /written by llama\.cpp b9999/,
      ],
      ['another state format', 'qwen2-hello', () => withHeader(file, { stateVersion: 99 }), /state format 99/],
      ['another KV layout', 'qwen2-hello', () => withHeader(file, { typeK: 'f16', typeV: 'f16' }), /cacheTypeK 'f16'/],
      ['a truncated file', 'qwen2-hello', () => file.slice(0, file.size - 1000), /truncated or damaged/],
      ['a damaged state', 'qwen2-hello', async () => damaged(file, file.size - 5000), /checksum/],
      ['a damaged header', 'qwen2-hello', async () => damaged(file, 40), /header is damaged/],
      [
        'not a state file',
        'qwen2-hello',
        () => new Blob([readFileSync(modelPath('qwen2-tiny'))]),
        /not a prompt state file/,
      ],
      [
        'tokens outside the vocabulary',
        'qwen2-hello',
        () => withHeader(file, { tokens: [1e9] }),
        /vocabulary|truncated/,
      ],
    ] as const)('%s', async (_, model, make, why) => {
      // The KV types are named: a file's own must not decide them when the test is about a mismatch.
      const engine = await shippedEngine(model, await make(), { cacheTypeK: 'f32', cacheTypeV: 'f32' });
      const info = (await engine.info()).model!;
      expect(info.promptState).toBeNull();
      expect(info.warnings?.join('\n')).toMatch(why);
      const r = await ask(engine, question('Name a bread.'));
      expect(r.timings.cache_source).toBe('none');
      expectSameAnswer(r, await ask(await track(coldEngine(model)), question('Name a bread.')));
    });

    it('another system prompt: prefilled in full, with a warning on the answer', async () => {
      const engine = await shippedEngine('qwen2-hello', file);
      const other: ChatMessage[] = [
        { role: 'system', content: `Be brief. ${SYSTEM}` },
        { role: 'user', content: 'Name a bread.' },
      ];
      const r = await ask(engine, other);
      expect(r.timings.cache_source).toBe('none');
      expect(r.warnings?.join('\n')).toMatch(
        /prompt state .* was not used: this prompt shares only its first \d+ tokens/,
      );
      expectSameAnswer(r, await ask(await track(coldEngine('qwen2-hello')), other));
    });

    it('a system prompt that goes on past the state uses the part it shares, and says so', async () => {
      const engine = await shippedEngine('qwen2-hello', file);
      const longer: ChatMessage[] = [
        { role: 'system', content: `${SYSTEM} Answer in French.` },
        { role: 'user', content: 'Name a bread.' },
      ];
      const r = await ask(engine, longer);
      expect(r.timings.cache_source).toBe('prompt-state');
      expect(r.warnings?.join('\n')).toMatch(/was used for \d+ tokens only/);
      expectSameAnswer(r, await ask(await track(coldEngine('qwen2-hello')), longer));
    });
  });

  it('a recurrent model does not take part of a state (its state is the one after the last token)', async () => {
    const engine = await shippedEngine('mamba-hello', await exported('mamba-hello'));
    const longer: ChatMessage[] = [
      { role: 'system', content: `${SYSTEM} Answer in French.` },
      { role: 'user', content: 'Name a bread.' },
    ];
    const r = await ask(engine, longer);
    expect(r.timings.cache_source).toBe('none');
    expect(r.warnings?.join('\n')).toMatch(/was not used/);
    expectSameAnswer(r, await ask(await track(coldEngine('mamba-hello')), longer));
  });

  it('refuses bad export and load parameters with a typed error, and the engine goes on', async () => {
    const engine = await track(testEngine('qwen2-hello', { ...NO_CACHE }));
    await expect(engine.cache.exportPrompt({ messages: [] })).rejects.toMatchObject({
      name: 'InvalidRequestError',
      code: 'invalid_parameter',
    });
    await expect(
      engine.load({ path: modelPath('qwen2-hello') }, { promptState: 42 as unknown as string }),
    ).rejects.toMatchObject({ name: 'InvalidRequestError', details: { param: 'promptState' } });
    const e2 = await track(createNodeEngine({ cache: NO_CACHE, modelsDir: null }));
    await expect(e2.cache.exportPrompt({ messages: [system] })).rejects.toMatchObject({ code: 'no_model' });
  });
});

describe('a prompt state from a URL', () => {
  let server: ModelServer;
  let dir: string;
  beforeAll(async () => {
    server = await ModelServer.start();
    dir = mkdtempSync(join(tmpdir(), 'hearth-state-'));
  });
  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is downloaded into the model store with progress, and loads from there without the network', async () => {
    const file = await exported('qwen2-hello');
    const url = server.add('/system.hearth-state', { bytes: new Uint8Array(await file.arrayBuffer()) });
    const progress: Array<{ phase: string; file?: string; loaded: number }> = [];
    const load = async () => {
      const engine = await track(createNodeEngine({ cache: NO_CACHE, modelsDir: dir }));
      await engine.load(
        { path: modelPath('qwen2-hello') },
        { nCtx: 2048, promptState: url, onProgress: (p) => progress.push(p) },
      );
      return engine;
    };
    const first = await load();
    expect(progress.some((p) => p.phase === 'download' && p.file === 'prompt-state' && p.loaded === file.size)).toBe(
      true,
    );
    expect((await ask(first, question('Name a bread.'))).timings.cache_source).toBe('prompt-state');
    const served = server.log.filter((l) => l.method === 'GET').length;
    await server.stop();
    const second = await load();
    expect((await second.info()).model!.warnings ?? []).toEqual([]);
    expect((await ask(second, question('Name a bread.'))).timings.cache_source).toBe('prompt-state');
    await server.listen();
    expect(server.log.filter((l) => l.method === 'GET').length).toBe(served);
  });

  it('resumes an interrupted download where it stopped', async () => {
    const file = await exported('qwen2-hello');
    const url = server.add('/slow/system.hearth-state', { bytes: new Uint8Array(await file.arrayBuffer()) });
    const engine = await track(createNodeEngine({ cache: NO_CACHE, modelsDir: mkdtempSync(join(dir, 'resume-')) }));
    server.bytesPerSecond = 64 << 10;
    const stop = new AbortController();
    await expect(
      engine.load(
        { path: modelPath('qwen2-hello') },
        {
          promptState: url,
          signal: stop.signal,
          onProgress: (p) => {
            if (p.file === 'prompt-state' && p.phase === 'download' && p.loaded > file.size * 0.4) stop.abort();
          },
        },
      ),
    ).rejects.toMatchObject({ name: 'AbortError' });
    const [partial] = await engine.models.list();
    expect(partial).toMatchObject({ complete: false });
    expect(partial!.downloaded).toBeGreaterThan(file.size * 0.3);
    server.bytesPerSecond = null;
    const sentBefore = server.sent('/slow/system.hearth-state');
    const downloads: number[] = [];
    const info = await engine.load(
      { path: modelPath('qwen2-hello') },
      {
        nCtx: 2048,
        promptState: url,
        onProgress: (p) => {
          if (p.file === 'prompt-state' && p.phase === 'download') downloads.push(p.loaded);
        },
      },
    );
    expect(downloads[0]).toBe(partial!.downloaded);
    expect(server.sent('/slow/system.hearth-state') - sentBefore).toBeLessThan(
      file.size - partial!.downloaded + (64 << 10),
    );
    expect(info.promptState?.bytes).toBeGreaterThan(0);
    expect((await ask(engine, question('Name a bread.'))).timings.cache_source).toBe('prompt-state');
  });

  it('a URL that serves something else: the load goes on without it, and says why', async () => {
    const url = server.add('/not-a-state.bin', {
      bytes: new TextEncoder().encode('<html>Not found</html>'.repeat(10)),
    });
    const engine = await track(createNodeEngine({ cache: NO_CACHE, modelsDir: dir }));
    const info = await engine.load({ path: modelPath('qwen2-hello') }, { promptState: url });
    expect(info.warnings?.join('\n')).toMatch(/is not a Hearth prompt state file/);
    const missing = await engine.load(
      { path: modelPath('qwen2-hello') },
      { promptState: `${server.url}/nothing-here` },
    );
    expect(missing.warnings?.join('\n')).toMatch(/was not loaded/);
    expect((await ask(engine, question('Name a bread.'))).timings.cache_source).toBe('none');
  });
});

describe('npm run prompt-state (hearth prompt-state)', () => {
  it('writes the same state as engine.cache.exportPrompt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-cli-'));
    try {
      writeFileSync(join(dir, 'system.txt'), SYSTEM);
      const out = join(dir, 'state.bin');
      execFileSync(
        'npx',
        [
          'tsx',
          'src/cli.ts',
          'prompt-state',
          '--model',
          modelPath('qwen2-hello'),
          '--system',
          join(dir, 'system.txt'),
          '-o',
          out,
        ],
        { stdio: 'pipe' },
      );
      const written = new Blob([readFileSync(out)]);
      const fromApi = await exported('qwen2-hello');
      const [a, b] = await Promise.all(
        [written, fromApi].map(async (f) => (await readPromptStateHeader(blobReader(f))).header),
      );
      expect(a).toEqual(b);
      const engine = await shippedEngine('qwen2-hello', written);
      expect((await ask(engine, question('Name a bread.'))).timings.cache_source).toBe('prompt-state');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** `file` with one byte flipped at `at`. */
async function damaged(file: Blob, at: number): Promise<Blob> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  bytes[at] = bytes[at]! ^ 0x55;
  return new Blob([bytes]);
}
