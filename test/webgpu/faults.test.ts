// The GPU engine when the GPU fails (Node: Dawn over lavapipe). A device destroyed mid-answer — what the browser does
// to a page's device when the GPU resets or its driver restarts — gives the answer in flight a typed error, and the
// next request reloads the model and continues the conversation from its saved state (on the CPU when no adapter
// comes back). A buffer the GPU cannot hold gives a typed error that names the sizes; with gpuFallback (backend
// 'auto' in pages) the model loads on the CPU instead. A slow GPU — a read of the outputs that waits longer than
// ggml-webgpu's 30 s deadline did — is waited for; a GPU engine that crashes twice hands the model to the CPU under
// gpuFallback.
import 'fake-indexeddb/auto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createNodeEngine } from '../../src/node.ts';
import type { ChatMessage } from '../../src/types.ts';
import { answerDiff, GPU_LOGPROB_TOLERANCE } from '../compare.ts';
import {
  ask,
  cachedEngine,
  expectSameAnswer,
  modelPath,
  NO_CACHE,
  newDb,
  next,
  reply,
  SYSTEM,
  testEngine,
  trackEngines,
} from '../helpers.ts';

const track = trackEngines();
const turn1: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: 'Name a bread.' },
];

/**
 * Dawn's navigator.gpu behind a wrapper the test controls: the devices the engines get (to destroy one), an adapter
 * that is gone (requestAdapter answers null, as a browser's does once its GPU is), devices whose buffers past
 * `budget` bytes are ones the device refuses (a GPU out of memory, simulated: the real device rejects the buffer, so
 * the error arrives as a real one would), buffer maps held back by `slowMapMs` once (a GPU slow to finish, simulated:
 * the map completes, late) or all failing while `failMaps` (a GPU whose work never completes right).
 */
function wrapGpu() {
  const real = Object.getOwnPropertyDescriptor(globalThis.navigator, 'gpu')!;
  const gpu = real.value as GPU;
  const control = {
    devices: [] as GPUDevice[],
    gone: false,
    budget: Number.POSITIVE_INFINITY,
    slowMapMs: 0,
    failMaps: false,
  };
  const wrapped = {
    wgslLanguageFeatures: gpu.wgslLanguageFeatures,
    getPreferredCanvasFormat: () => gpu.getPreferredCanvasFormat(),
    async requestAdapter(options?: GPURequestAdapterOptions) {
      if (control.gone) return null;
      const adapter = await gpu.requestAdapter(options);
      if (!adapter) return null;
      const requestDevice = adapter.requestDevice.bind(adapter);
      adapter.requestDevice = async (desc) => {
        const device = await requestDevice(desc);
        control.devices.push(device);
        const createBuffer = device.createBuffer.bind(device);
        let used = 0;
        device.createBuffer = (d) => {
          used += d.size;
          const buffer = createBuffer(used > control.budget ? { ...d, size: 2 ** 52 } : d);
          const mapAsync = buffer.mapAsync.bind(buffer);
          buffer.mapAsync = async (...args) => {
            if (control.failMaps) throw new DOMException('the map failed (simulated)', 'OperationError');
            const delay = control.slowMapMs;
            control.slowMapMs = 0;
            const mapped = mapAsync(...args);
            if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
            return mapped;
          };
          return buffer;
        };
        return device;
      };
      return adapter;
    },
  };
  Object.defineProperty(globalThis.navigator, 'gpu', { value: wrapped, configurable: true });
  onTestFinished(() => {
    Object.defineProperty(globalThis.navigator, 'gpu', real);
  });
  return control;
}

/** Streams an answer and destroys the engine's GPU device after `after` chunks; the error the stream ends with. */
async function loseDeviceMidAnswer(
  engine: Awaited<ReturnType<typeof testEngine>>,
  messages: ChatMessage[],
  device: () => GPUDevice,
  after = 3,
) {
  const stream = await engine.chat.completions.create({ messages, temperature: 0, max_tokens: 40, stream: true });
  let chunks = 0;
  try {
    for await (const _ of stream) if (++chunks === after) device().destroy();
  } catch (err) {
    return { chunks, err: err as Error & { code?: string } };
  }
  return { chunks, err: null };
}

describe('a GPU that fails', () => {
  it('the device lost mid-answer: a typed error; the next request reloads the model, on the GPU again, and continues the conversation from IndexedDB as a cold engine answers it', async () => {
    const gpu = wrapGpu();
    const db = newDb();
    const engine = await track(cachedEngine('qwen2-tiny', { db, variant: 'webgpu' }));
    const turn2 = next(turn1, reply(await ask(engine, turn1)), 'And a river?');
    await engine.cache.flush();
    const lost = await loseDeviceMidAnswer(engine, turn2, () => gpu.devices.at(-1)!);
    expect(lost.chunks).toBeGreaterThanOrEqual(3);
    expect(lost.err).toMatchObject({ name: 'EngineError', code: 'gpu_lost' });
    expect(lost.err!.message).toMatch(/the GPU was lost .*loads the model again/);

    const devices = gpu.devices.length;
    const resumed = await ask(engine, turn2);
    expect(gpu.devices.length).toBe(devices + 1); // a new device
    expect((await engine.info()).gpu?.layers).toBeGreaterThan(0);
    // The first turn's state came back from IndexedDB (what the lost answer held in memory is gone).
    expect(resumed.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0);
    const cold = await track(testEngine('qwen2-tiny', { variant: 'webgpu', ...NO_CACHE, nCtx: 2048 }));
    expectSameAnswer(resumed, await ask(cold, turn2), GPU_LOGPROB_TOLERANCE);
  });

  it('the device lost and no adapter after it: the next request is answered on the CPU, as the CPU engine answers it', async () => {
    const gpu = wrapGpu();
    const engine = await track(testEngine('qwen2-tiny', { variant: 'webgpu', ...NO_CACHE, nCtx: 2048 }));
    const lost = await loseDeviceMidAnswer(engine, turn1, () => {
      gpu.gone = true;
      return gpu.devices.at(-1)!;
    });
    expect(lost.err).toMatchObject({ code: 'gpu_lost' });
    const onCpu = await ask(engine, turn1);
    const info = await engine.info();
    expect(info.backend).toBe('wasm');
    expect(info.gpu).toBeNull();
    const cpu = await track(testEngine('qwen2-tiny', { ...NO_CACHE, nCtx: 2048 }));
    const diff = answerDiff(onCpu, await ask(cpu, turn1));
    expect(diff.tokens[0]).toEqual(diff.tokens[1]);
    expect(diff.logprobs).toBe(0); // the same CPU code
  });

  it('a GPU slower than any fixed deadline (a read of the outputs held back 31 s, simulated): the answer waits for it and is the same', async () => {
    const gpu = wrapGpu();
    const engine = await track(testEngine('qwen2-tiny', { variant: 'webgpu', ...NO_CACHE, nCtx: 2048 }));
    const first = await ask(engine, turn1);
    gpu.slowMapMs = 31_000;
    const t0 = performance.now();
    const slow = await ask(engine, turn1);
    expect(performance.now() - t0).toBeGreaterThan(30_000);
    expect(gpu.slowMapMs).toBe(0); // the held-back map was this answer's
    expect(answerDiff(slow, first).logprobs).toBe(0);
  });

  it("a GPU engine that crashes twice hands the model to the CPU under gpuFallback ('auto'), saying why, and answers as the CPU engine does (every map failing, simulated)", async () => {
    const gpu = wrapGpu();
    const engine = await track(
      createNodeEngine({ variant: 'webgpu', modelsDir: null, cache: NO_CACHE, gpuFallback: true }),
    );
    await engine.load({ path: modelPath('qwen2-tiny') }, { nCtx: 2048 });
    gpu.failMaps = true;
    for (let crash = 1; crash <= 2; crash++) {
      const err = await ask(engine, turn1).catch((e) => e);
      expect(err).toMatchObject({ name: 'EngineError', code: 'wasm_crash' });
      expect(err.message).toMatch(/loads the model again/);
    }
    const onCpu = await ask(engine, turn1);
    const info = await engine.info();
    expect(info.gpu?.layers).toBe(0);
    expect(info.model?.warnings?.at(-1)).toMatch(
      /^every layer runs on the CPU: the GPU engine crashed 2 times \(last: .*map/i,
    );
    const cpu = await track(testEngine('qwen2-tiny', { ...NO_CACHE, nCtx: 2048 }));
    const diff = answerDiff(onCpu, await ask(cpu, turn1));
    expect(diff.tokens[0]).toEqual(diff.tokens[1]);
    expect(diff.logprobs).toBe(0);
  });

  it('a model the GPU cannot hold: a typed error naming the sizes, and the engine loads again after it; with gpuFallback it loads on the CPU (GPU out of memory, simulated: the device refuses buffers past a budget)', async () => {
    const gpu = wrapGpu();
    gpu.budget = 1 << 20;
    const engine = await track(createNodeEngine({ variant: 'webgpu', modelsDir: null, cache: NO_CACHE }));
    const refused = await engine.load({ path: modelPath('qwen2-tiny') }, { nCtx: 2048 }).catch((e) => e);
    expect(refused).toMatchObject({ name: 'EngineError', code: 'gpu_allocation_failed' });
    expect(refused.message).toMatch(/a GPU buffer of \d+ bytes .*could not be allocated, with \d+ bytes in buffers/);
    expect(refused.message).toMatch(/gpuLayers/);
    gpu.budget = Number.POSITIVE_INFINITY;
    await engine.load({ path: modelPath('qwen2-tiny') }, { nCtx: 2048 });
    expect((await engine.info()).gpu?.layers).toBeGreaterThan(0);

    gpu.budget = 1 << 20;
    const fallback = await track(
      createNodeEngine({ variant: 'webgpu', modelsDir: null, cache: NO_CACHE, gpuFallback: true }),
    );
    const loaded = await fallback.load({ path: modelPath('qwen2-tiny') }, { nCtx: 2048 });
    expect(loaded.warnings?.[0]).toMatch(/^every layer runs on the CPU: a GPU buffer of \d+ bytes/);
    expect((await fallback.info()).gpu?.layers).toBe(0);
    const cpu = await track(testEngine('qwen2-tiny', { ...NO_CACHE, nCtx: 2048 }));
    const diff = answerDiff(await ask(fallback, turn1), await ask(cpu, turn1));
    expect(diff.tokens[0]).toEqual(diff.tokens[1]);
    expect(diff.logprobs).toBe(0);
  });
});
