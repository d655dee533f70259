// Hearth's engine on the GPU, through the public API (Node: Dawn over lavapipe): the same engine as on the CPU with
// llama.cpp's WebGPU backend beneath it. It answers as the CPU engine does; its conversations continue from the
// cache as a cold engine answers them; its state saved in IndexedDB resumes on the CPU engine and the other way
// round; and a model's weights go to the GPU without passing through the heap whole.
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LlamaModel } from '../../src/backends/llamacpp/binding/model.ts';
import { createNodeEngine } from '../../src/node.ts';
import type { ChatMessage, ContentPart } from '../../src/types.ts';
import { answerDiff, GPU_LOGPROB_TOLERANCE, GPU_MEDIA_TOLERANCE } from '../compare.ts';
import { testPng, testWav } from '../fixtures/media.ts';
import { ensureModel } from '../fixtures/models.ts';
import { ModelServer } from '../model-server.ts';
import { ensureMultimodal, PROJECTORS } from '../fixtures/projectors.ts';
import {
  ask,
  cachedEngine,
  inspect,
  modelPath,
  NO_CACHE,
  newDb,
  next,
  openLlama,
  reply,
  SYSTEM,
  testEngine,
  trackEngines,
} from '../helpers.ts';

const track = trackEngines();
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const worst: Record<string, number> = {};
afterAll(() => console.log(`largest |Δ logprob| GPU vs CPU engine: ${JSON.stringify(worst)}`));

const turn1: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'Name a bread.' },
];

/** The same tokens, and top log-probabilities within `tolerance`; `what` names the largest difference seen. */
function expectAlike(
  what: string,
  a: Parameters<typeof answerDiff>[0],
  b: Parameters<typeof answerDiff>[1],
  tolerance = GPU_LOGPROB_TOLERANCE,
) {
  const diff = answerDiff(a, b);
  worst[what] = Number(diff.logprobs.toFixed(4));
  expect(diff.tokens[0]).toEqual(diff.tokens[1]);
  expect(diff.logprobs).toBeLessThan(tolerance);
}

/** The largest difference of the next-token logits of `cold`'s 5 likeliest tokens (recorded under `what`). */
function topDiff(what: string, a: Float32Array, cold: Float32Array): number {
  const top = [...cold.keys()].sort((x, y) => cold[y]! - cold[x]!).slice(0, 5);
  const d = Math.max(...top.map((t) => Math.abs(a[t]! - cold[t]!)));
  worst[what] = Number(d.toFixed(4));
  return d;
}

describe('the GPU engine', () => {
  it('runs every layer on the adapter and says so in info()', async () => {
    const gpu = await track(testEngine('qwen2-hello', { variant: 'webgpu', ...NO_CACHE }));
    const info = await gpu.info();
    expect(info.build).toBe('webgpu');
    expect(info.gpu?.adapter).toMatch(/llvmpipe/);
    expect(info.gpu?.shaderPath).toBe('f16');
    expect(info.gpu?.subgroupMatrix).toBe(false);
    expect(info.gpu?.layers).toBeGreaterThan(0);
    expect(info.gpu?.layers).toBe(info.gpu?.totalLayers);
    const cpu = await track(testEngine('qwen2-hello', NO_CACHE));
    expect((await cpu.info()).gpu).toBeNull();
  });

  it("shaderF16: false takes the f32 shader path (an adapter without shader-f16's) and says so in info()", async () => {
    const gpu = await track(testEngine('qwen2-hello', { variant: 'webgpu', shaderF16: false, ...NO_CACHE }));
    const info = await gpu.info();
    expect(info.gpu?.shaderPath).toBe('f32');
    expect(info.gpu?.layers).toBe(info.gpu?.totalLayers);
  });

  it('without an adapter, the GPU build refuses to start with a typed error that says why (not a slower CPU engine)', async () => {
    const gpu = Object.getOwnPropertyDescriptor(globalThis.navigator, 'gpu')!;
    Object.defineProperty(globalThis.navigator, 'gpu', { value: undefined, configurable: true });
    try {
      const refused = await createNodeEngine({ variant: 'webgpu', modelsDir: null }).catch((e) => e);
      expect(refused).toMatchObject({ name: 'EngineError', code: 'webgpu_unavailable' });
      expect(refused.message).toMatch(/^llama\.cpp's WebGPU backend could not use this adapter: .*navigator\.gpu/);
    } finally {
      Object.defineProperty(globalThis.navigator, 'gpu', gpu);
    }
  });

  // lavapipe has no matrix units: the adapter is wrapped to offer them (its device is then asked without the feature,
  // which lavapipe would refuse). What is checked is the glue between the browser's adapter and ggml-webgpu:
  // the feature and its configurations read, an f16 one chosen, the device asked for it; the shaders themselves
  // need a GPU that has the feature (the device benchmark).
  it.each([
    ['an f16 configuration', true, [{ componentType: 'f16', resultComponentType: 'f16', M: 16, N: 16, K: 16 }], {}],
    ['only f32 configurations', false, [{ componentType: 'f32', resultComponentType: 'f32', M: 8, N: 8, K: 8 }], {}],
    [
      'subgroupMatrix: false',
      false,
      [{ componentType: 'f16', resultComponentType: 'f16', M: 16, N: 16, K: 16 }],
      { subgroupMatrix: false },
    ],
    [
      'shaderF16: false',
      false,
      [{ componentType: 'f16', resultComponentType: 'f16', M: 8, N: 16, K: 16 }],
      { shaderF16: false },
    ],
  ] as const)(
    'subgroup matrices (the adapter simulated: lavapipe has none), %s: used = %s',
    async (_, used, configs, opts) => {
      const gpu = Object.getOwnPropertyDescriptor(globalThis.navigator, 'gpu')!;
      const real = gpu.value as GPU;
      const feature = 'chromium-experimental-subgroup-matrix';
      const asked: string[][] = [];
      const simulated = {
        requestAdapter: async (o?: GPURequestAdapterOptions) => {
          const a = (await real.requestAdapter(o))!;
          const i = a.info as GPUAdapterInfo & { subgroupMinSize?: number; subgroupMaxSize?: number };
          return {
            features: new Set([...a.features, feature]),
            limits: a.limits,
            isFallbackAdapter: i.isFallbackAdapter,
            info: {
              vendor: i.vendor,
              architecture: i.architecture,
              device: i.device,
              description: i.description,
              subgroupMinSize: i.subgroupMinSize,
              subgroupMaxSize: i.subgroupMaxSize,
              subgroupMatrixConfigs: configs,
            },
            requestDevice: (d: GPUDeviceDescriptor = {}) => {
              const features = [...(d.requiredFeatures ?? [])] as string[];
              asked.push(features);
              return a.requestDevice({
                ...d,
                requiredFeatures: features.filter((f) => f !== feature) as GPUFeatureName[],
              });
            },
          };
        },
      };
      Object.defineProperty(globalThis.navigator, 'gpu', { value: simulated, configurable: true });
      try {
        const llama = await openLlama({}, 'webgpu', opts);
        expect(asked).toHaveLength(1);
        expect(asked[0]!.includes(feature)).toBe(used);
        expect(llama.gpuSubgroupMatrix).toBe(used);
        // The configuration's sizes as ggml-webgpu read them from the struct the glue filled.
        const logged = llama.log.since(0).join('\n');
        if (used) expect(logged).toMatch(/subgroup matrices f16 16x16x16/);
        else expect(logged).not.toMatch(/subgroup matrices/);
        if (used) {
          const engine = await track(createNodeEngine({ variant: 'webgpu', modelsDir: null }));
          expect((await engine.info()).gpu?.subgroupMatrix).toBe(true);
        }
      } finally {
        Object.defineProperty(globalThis.navigator, 'gpu', gpu);
      }
    },
  );

  it.each(['qwen2-hello', 'llama3-hello', 'gemma3-hello', 'mamba-hello', 'qwen35-hello'] as const)(
    '%s: answers as the CPU engine does (greedy tokens, top-20 log-probabilities)',
    async (model) => {
      const gpu = await track(testEngine(model, { variant: 'webgpu', ...NO_CACHE }));
      const cpu = await track(testEngine(model, NO_CACHE));
      expectAlike(model, await ask(gpu, turn1), await ask(cpu, turn1));
    },
  );

  it('with gpuLayers: 1, one layer on the GPU and the rest on the CPU, the same answer', async () => {
    const part = await track(testEngine('qwen2-hello', { variant: 'webgpu', gpuLayers: 1, ...NO_CACHE }));
    const info = await part.info();
    expect(info.gpu?.layers).toBe(1);
    expect(info.gpu?.totalLayers).toBeGreaterThan(1);
    const cpu = await track(testEngine('qwen2-hello', NO_CACHE));
    expectAlike('qwen2-hello, 1 layer', await ask(part, turn1), await ask(cpu, turn1));
  });

  it('continues a conversation from its cache as a cold GPU engine answers it', async () => {
    const gpu = await track(cachedEngine('qwen2-tiny', { variant: 'webgpu' }));
    const turn2 = next(turn1, reply(await ask(gpu, turn1)), 'And a river?');
    const cached = await inspect(gpu).promptLogits({ messages: turn2 });
    expect(cached.source).toBe('memory');
    const cold = await track(testEngine('qwen2-tiny', { variant: 'webgpu', ...NO_CACHE, nCtx: 2048 }));
    const fresh = await inspect(cold).promptLogits({ messages: turn2 });
    expect(fresh.cached).toBe(0);
    expect(topDiff('qwen2-tiny, cached vs cold', cached.logits, fresh.logits)).toBeLessThan(GPU_LOGPROB_TOLERANCE);
  });

  it.each([
    ['GPU', 'CPU'],
    ['CPU', 'GPU'],
  ] as const)('a conversation saved in IndexedDB by the %s engine resumes on the %s engine', async (from, to) => {
    const db = newDb();
    const variant = (side: 'GPU' | 'CPU') => (side === 'GPU' ? 'webgpu' : undefined);
    const saver = await track(cachedEngine('qwen2-tiny', { db, variant: variant(from) }));
    const turn2 = next(turn1, reply(await ask(saver, turn1)), 'And a river?');
    await saver.cache.flush();
    const reloaded = await track(cachedEngine('qwen2-tiny', { db, variant: variant(to) }));
    const restored = await inspect(reloaded).promptLogits({ messages: turn2 });
    expect(restored.source).toBe('indexeddb');
    expect(restored.cached).toBeGreaterThan(0);
    const cold = await track(testEngine('qwen2-tiny', { variant: variant(to), ...NO_CACHE, nCtx: 2048 }));
    const fresh = await inspect(cold).promptLogits({ messages: turn2 });
    expect(topDiff(`qwen2-tiny, ${from} to ${to}`, restored.logits, fresh.logits)).toBeLessThan(GPU_LOGPROB_TOLERANCE);
  });
});

describe('images and audio on the GPU engine', () => {
  it.each([
    ['gemma3-vision', { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(testPng(96, 96, 3))}` } }],
    ['qwen25vl-vision', { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(testPng(96, 96, 3))}` } }],
    ['qwen2a-audio', { type: 'input_audio', input_audio: { data: b64(testWav(1.5, 16000, 3)), format: 'wav' } }],
  ] as const)('%s: the model and its projector, both on the GPU, answer as on the CPU engine', async (name, part) => {
    const { model, mmproj } = await ensureMultimodal(name);
    const engine = (variant?: 'webgpu') =>
      track(
        testEngine(PROJECTORS[name].model, {
          path: model,
          projector: { path: mmproj },
          nCtx: 2048,
          variant,
          ...NO_CACHE,
        }),
      );
    const messages: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, part] }];
    const gpu = await engine('webgpu');
    expect((await gpu.info()).gpu?.projector).toBe('gpu'); // llama.cpp's default: the encoder beside the layers
    const onGpu = await ask(gpu, messages);
    const again = await ask(gpu, messages);
    expectAlike(`${name}, GPU twice`, onGpu, again);
    const other = structuredClone(messages);
    const p = (other[0]!.content as ContentPart[])[1]!;
    if (p.type === 'image_url') p.image_url.url = `data:image/png;base64,${b64(testPng(96, 96, 4))}`;
    if (p.type === 'input_audio') p.input_audio.data = b64(testWav(1.5, 16000, 4));
    const moved = answerDiff(onGpu, await ask(gpu, other)).logprobs;
    worst[`${name}, another input`] = Number(moved.toFixed(4));
    expect(moved).toBeGreaterThan(3 * GPU_MEDIA_TOLERANCE); // so the comparison below could fail
    expectAlike(name, onGpu, await ask(await engine(), messages), GPU_MEDIA_TOLERANCE);
  });
});

describe('an M-RoPE image on the GPU engine (qwen25vl-vision)', () => {
  it('the turn after it, from memory and from IndexedDB after a reload, answers as a cold GPU engine', async () => {
    const name = 'qwen25vl-vision';
    const { model, mmproj } = await ensureMultimodal(name);
    const db = newDb();
    const engine = (cache: object) =>
      track(
        testEngine(PROJECTORS[name].model, {
          path: model,
          projector: { path: mmproj },
          nCtx: 2048,
          variant: 'webgpu',
          minTokens: 16,
          ...cache,
        }),
      );
    const png = `data:image/png;base64,${b64(testPng(128, 96, 5))}`;
    const first: ChatMessage[] = [
      { role: 'system', content: 'You describe what you are shown, briefly.' },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: png } },
          { type: 'text', text: 'What is this?' },
        ],
      },
    ];
    const warm = await engine({ db });
    const r1 = await ask(warm, first, { conversation_id: 'gpu-mrope' });
    const second = [
      ...first,
      { role: 'assistant' as const, content: r1.choices[0]!.message.content },
      { role: 'user' as const, content: 'Say more.' },
    ];
    const cold = await engine(NO_CACHE);
    const fresh = await ask(cold, second);
    const cached = await ask(warm, second, { conversation_id: 'gpu-mrope' });
    expect(cached.timings.cache_source).toBe('memory');
    expectAlike(`${name}, cached turn on the GPU`, cached, fresh, GPU_MEDIA_TOLERANCE);
    await warm.cache.flush();
    await warm.unload();
    const reloaded = await engine({ db });
    const restored = await ask(reloaded, second, { conversation_id: 'gpu-mrope' });
    expect(restored.timings.cache_source).toBe('indexeddb');
    expect((restored.timings as { media_ms?: number }).media_ms ?? 0).toBe(0);
    expectAlike(`${name}, restored turn on the GPU`, restored, fresh, GPU_MEDIA_TOLERANCE);
  });
});

describe('speculative decoding on the GPU engine', () => {
  it('n-gram guesses, some taken and some refused: the same reply as without, and as the CPU engine', async () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You greet.' },
      { role: 'user', content: 'Greeting?' },
      { role: 'assistant', content: 'Hello, there world!' },
      { role: 'user', content: 'Greeting?' },
    ];
    const gpu = await track(testEngine('qwen2-hello', { variant: 'webgpu', ...NO_CACHE }));
    const plain = await ask(gpu, messages, { max_tokens: 16 });
    const guessed = await ask(gpu, messages, { max_tokens: 16, speculative: { kind: 'ngram' } });
    expectAlike('qwen2-hello, speculative on the GPU', guessed, plain);
    const t = guessed.timings as { draft_n?: number; draft_n_accepted?: number };
    expect(t.draft_n_accepted).toBeGreaterThan(0);
    expect(t.draft_n!).toBeGreaterThan(t.draft_n_accepted!);
    const cpu = await track(testEngine('qwen2-hello', NO_CACHE));
    expectAlike('qwen2-hello, speculative GPU vs CPU', guessed, await ask(cpu, messages, { max_tokens: 16 }));
  });

  it("a draft model on the GPU too: its guesses, some taken and some refused, give the reply without, and the CPU engine's", async () => {
    const draft = { path: await ensureModel('qwen2-hello-draft') };
    const gpu = await track(testEngine('qwen2-hello', { variant: 'webgpu', ...NO_CACHE, nCtx: 1024, draft }));
    const { gpu: onGpu } = await gpu.info();
    expect(onGpu?.layers).toBe(onGpu?.totalLayers);
    const plain = await ask(gpu, turn1, { max_tokens: 16, speculative: null });
    const guessed = await ask(gpu, turn1, { max_tokens: 16 });
    expectAlike('qwen2-hello, draft guesses on the GPU', guessed, plain);
    const t = guessed.timings as { draft_n?: number; draft_n_accepted?: number };
    expect(t.draft_n_accepted).toBeGreaterThan(0);
    expect(t.draft_n!).toBeGreaterThan(t.draft_n_accepted!);
    const cpu = await track(testEngine('qwen2-hello', { ...NO_CACHE, nCtx: 1024, draft }));
    expectAlike('qwen2-hello, draft guesses GPU vs CPU', guessed, await ask(cpu, turn1, { max_tokens: 16 }));
  });
});

describe('weights to the GPU', () => {
  it("the heap's limit bounds what stays in the heap, not the file: the GPU engine takes a model the CPU engine refuses", async () => {
    // qwen2-hello: 45 MB, of which its token embeddings (19 MB) stay on the CPU; its output matrix goes to the GPU.
    const size = statSync(modelPath('qwen2-hello')).size;
    const limited = (variant?: 'webgpu') => track(createNodeEngine({ variant, maxModelBytes: 30e6, cache: NO_CACHE }));
    const onGpu = await limited('webgpu');
    await onGpu.load({ path: modelPath('qwen2-hello') });
    const { gpu } = await onGpu.info();
    expect(gpu?.layers).toBe(gpu?.totalLayers);
    expect(size).toBeGreaterThan(30e6);
    const onCpu = await limited();
    await expect(onCpu.load({ path: modelPath('qwen2-hello') })).rejects.toMatchObject({ code: 'too_large' });
    const tight = await track(createNodeEngine({ variant: 'webgpu', maxModelBytes: 10e6, cache: NO_CACHE }));
    const err = await tight.load({ path: modelPath('qwen2-hello') }).catch((e) => e);
    expect(err).toMatchObject({ code: 'too_large', details: { heapBytes: 151936 * 64 * 2 } });
    expect(err.message).toMatch(/on the GPU engine the heap would hold 18\.5 MiB .*token embeddings/);
    // The engine stays usable: a model that fits loads after the refusal (32,000 tokens of 64: 4 MiB of embeddings).
    await tight.load({ path: modelPath('spm-notemplate') });
    expect((await tight.info()).gpu?.layers).toBeGreaterThan(0);
  });

  it('refuses a model from a URL before downloading it, from its header read by ranges; after it where the server gives no ranges', async () => {
    const server = await ModelServer.start();
    const modelsDir = mkdtempSync(join(tmpdir(), 'hearth-models-'));
    try {
      const size = statSync(modelPath('qwen2-hello')).size;
      const ranged = server.add('/qwen2-hello.gguf', { path: modelPath('qwen2-hello') });
      const whole = server.add('/whole/qwen2-hello.gguf', { path: modelPath('qwen2-hello'), noRanges: true });
      const tight = await track(
        createNodeEngine({ variant: 'webgpu', maxModelBytes: 10e6, cache: NO_CACHE, modelsDir }),
      );
      await expect(tight.load(ranged)).rejects.toMatchObject({
        code: 'too_large',
        details: { heapBytes: 151936 * 64 * 2 },
      });
      // The header's first 8 MiB by one range request, and nothing stored.
      expect(server.log.filter((e) => e.method === 'GET').map((e) => e.range)).toEqual([`bytes=0-${8 * 2 ** 20 - 1}`]);
      expect(server.sent('/qwen2-hello.gguf')).toBeLessThan(size / 4);
      expect(await tight.models.list()).toEqual([]);
      // A server that answers a range with the whole file: the check waits for the download, and refuses the same.
      await expect(tight.load(whole)).rejects.toMatchObject({ code: 'too_large' });
      expect(server.sent('/whole/qwen2-hello.gguf')).toBeGreaterThanOrEqual(size);
    } finally {
      await server.stop();
      rmSync(modelsDir, { recursive: true, force: true });
    }
  });

  it('a model loads onto the GPU with a heap peak below half its file: the heap holds only what stays on the CPU', async () => {
    const path = await ensureModel('llama-wide');
    const llama = await openLlama({ '/models': dirname(path) }, 'webgpu');
    const mark = llama.log.mark();
    const model = await LlamaModel.load(llama, `/models/${basename(path)}`, { gpuLayers: 1 << 24 });
    expect(model).toBeTruthy();
    const peak = llama.heapPeak;
    const size = statSync(path).size;
    const buffers = llama.log.since(mark).filter((l) => /model buffer size/.test(l));
    console.log(
      `[heap] ${basename(path)}: ${(size / 2 ** 20).toFixed(0)} MiB file; heap peak ${(peak / 2 ** 20).toFixed(0)} MiB ` +
        `(${((100 * peak) / size).toFixed(0)}%); ${buffers.join('; ')}`,
    );
    // What stays in the heap: the token embeddings (llama.cpp keeps the input layer on the CPU), one 16 MiB chunk of a
    // GPU tensor at a time (wasm/patches/0023; without it, the whole 33 MiB output matrix at once) and a few MiB of
    // the module's own.
    const cpu = Number(buffers.find((l) => /\bCPU model buffer/.test(l))?.match(/([\d.]+) MiB/)?.[1]) * 2 ** 20;
    expect(peak).toBeLessThan(cpu + 24 * 2 ** 20);
    expect(peak).toBeLessThan(size / 2);
    model!.free();
  });
});
