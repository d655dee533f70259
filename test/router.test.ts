// The backend router (src/api/router.ts) with the real wasm engine as home and as the fallback. The other
// backend is a stand-in for wllama on a GPU (simulated: no GPU runs here), which records what reaches it: the router
// must refuse what a backend does not support before the backend sees it, and under 'auto' hand the model to the next.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend, LoadRequest } from '../src/contract.ts';
import { BackendRouter } from '../src/api/router.ts';
import { engineCalls } from '../src/api/services.ts';
import { llamacppBackend } from '../src/backends/llamacpp/backend.ts';
import { EngineApi } from '../src/api/engine-api.ts';
import { createNodeEngine, type NodeEngine } from '../src/node.ts';
import { checkEngineOptions } from '../src/core/options.ts';
import type { BackendSelection } from '../src/types.ts';
import { ensureModel } from './fixtures/models.ts';

let home: NodeEngine;
let model: string;

beforeAll(async () => {
  model = await ensureModel('qwen2-hello');
  home = await createNodeEngine({ cache: { persistent: false }, modelsDir: null });
});
afterAll(() => home?.unload());

/** A simulated wllama (a GPU backend of its own): supports only nCtx, stops at a full context, no embeddings; `refuse` makes fit() refuse. */
function simulatedGpu(refuse: string | null = null) {
  const calls: string[] = [];
  const backend: Backend = {
    kind: 'wllama',
    supports: {
      loadOptions: { nCtx: true },
      contextOverflow: ['stop'],
      embeddings: false,
      rerank: false,
      media: false,
      speculative: false,
    },
    fit: async (request: LoadRequest) => {
      calls.push('fit');
      // As wllama does: the bytes it read are what the next backend gets.
      return { refusal: refuse, request: { ...request, source: { path: model } } };
    },
    load: async () => {
      calls.push('load');
      return (await home.engine.info()).model!;
    },
    complete: async (request, control) => {
      calls.push('complete');
      return home.engine.complete(request, control); // answers as the engine would
    },
    embed: async () => {
      throw new Error('embed reached the backend');
    },
    rank: async () => {
      throw new Error('rank reached the backend');
    },
    countTokens: (request, control) => home.engine.countTokens(request, control),
    info: async () => ({ ...(await home.engine.info()), backend: 'wllama' }),
    unload: async () => void calls.push('unload'),
  };
  return { backend, calls };
}

const selection = (): BackendSelection => ({
  requested: 'auto',
  reason: 'the WebGPU backend passed its self-test',
  adapter: null,
  selfTest: null,
});
/** The public API over a router of these backends, with the wasm engine's services. */
const over = (backends: Backend[]) =>
  new EngineApi({ calls: engineCalls(new BackendRouter(backends, selection()), home.engine), terminate: () => {} });
const refusal = (e: { name: string; code: string; details: { param?: string } }) => ({
  name: e.name,
  code: e.code,
  param: e.details.param,
});

describe('the backend router', () => {
  it('under auto, a load with an option the first backend lacks goes to the wasm engine, which answers; info() says why', async () => {
    const gpu = simulatedGpu();
    const api = over([gpu.backend, llamacppBackend(home.engine)]);
    await api.load({ path: model }, { nParallel: 2 });
    expect(gpu.calls).toEqual([]);
    const info = await api.info();
    expect(info.backend).toBe('wasm');
    expect(info.selection.reason).toBe(
      "the 'wllama' backend does not support the load option nParallel: this model runs on wasm",
    );
    const reply = await api.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0 });
    expect(reply.choices[0]!.message.content).toBe('Hello, world!');
    // Embeddings reach the wasm engine (which answers for this model: not an embedding model), not a backend refusal.
    expect(await api.embeddings.create({ input: 'bread' }).catch(refusal)).toMatchObject({
      code: 'not_an_embedding_model',
    });
  });

  it('under auto, a model the first backend does not fit goes to the next with the bytes that backend already read', async () => {
    const gpu = simulatedGpu("its largest tensor exceeds the adapter's storage buffer limit");
    const api = over([gpu.backend, llamacppBackend(home.engine)]);
    // A source nothing could open: only the request fit() returned loads.
    await api.load({ path: '/nonexistent/model.gguf' }, { nCtx: 512 });
    expect(gpu.calls).toEqual(['fit']);
    expect((await api.info()).selection.reason).toBe(
      "its largest tensor exceeds the adapter's storage buffer limit: this model runs on wasm",
    );
  });

  it('with one backend, refuses what it does not support before it sees the call, and leaves the rest to it', async () => {
    const gpu = simulatedGpu();
    const api = over([gpu.backend]);
    expect(await api.load({ path: model }, { kvBudgetBytes: 1 << 28 }).catch(refusal)).toEqual({
      name: 'InvalidRequestError',
      code: 'unsupported_by_backend',
      param: 'kvBudgetBytes',
    });
    await api.load({ path: model }, { nCtx: 512 });
    const ask = (extra: object) =>
      api.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], ...extra });
    expect(await ask({ context_overflow: 'shift' }).catch(refusal)).toEqual({
      name: 'InvalidRequestError',
      code: 'unsupported_by_backend',
      param: 'context_overflow',
    });
    expect(await api.embeddings.create({ input: 'bread' }).catch(refusal)).toMatchObject({
      name: 'InvalidRequestError',
      code: 'unsupported_by_backend',
    });
    expect(await api.rerank({ query: 'food', documents: ['bread'] }).catch(refusal)).toMatchObject({
      code: 'unsupported_by_backend',
    });
    expect(gpu.calls).toEqual(['load']);
    expect((await ask({ temperature: 0 })).choices[0]!.message.content).toBe('Hello, world!');
    expect(gpu.calls).toEqual(['load', 'complete']);
  });

  it('a load that moves the model to another backend unloads the one that held it first', async () => {
    const gpu = simulatedGpu();
    const api = over([gpu.backend, llamacppBackend(home.engine)]);
    await api.load({ path: model }, { nCtx: 512 });
    expect((await api.info()).backend).toBe('wllama');
    await api.load({ path: model }, { nParallel: 2 });
    expect(gpu.calls).toEqual(['fit', 'load', 'unload']);
    expect((await api.info()).backend).toBe('wasm');
  });
});

describe('load options, checked once', () => {
  const bad = [
    [{ nCtx: 0 }, 'nCtx'],
    [{ nCtx: 1024.5 }, 'nCtx'],
    [{ nParallel: 0 }, 'nParallel'],
    [{ nParallel: 17 }, 'nParallel'],
    [{ kvBudgetBytes: -1 }, 'kvBudgetBytes'],
    [{ cacheTypeK: 'q5_1' }, 'cacheTypeK'],
    [{ cacheTypeV: 'bf16' }, 'cacheTypeV'],
    [{ swaFull: 'yes' }, 'swaFull'],
    [{ gpuLayers: -1 }, 'gpuLayers'],
    [{ gpuLayers: 'all' }, 'gpuLayers'],
    [{ promptState: 42 }, 'promptState'],
  ] as const;

  it('a nonsense option is an InvalidRequestError naming it, before any backend sees the load, the same whichever backend', async () => {
    for (const backends of [() => [simulatedGpu().backend], () => [llamacppBackend(home.engine)]]) {
      const gpu = simulatedGpu();
      const api = over([gpu.backend, ...backends()]);
      for (const [options, param] of bad) {
        expect(await api.load({ path: model }, options as never).catch(refusal), param).toEqual({
          name: 'InvalidRequestError',
          code: 'invalid_parameter',
          param,
        });
      }
      expect(gpu.calls).toEqual([]);
    }
  });

  it("nCtx above the model's training context or its memory budget is refused with the reason, never clamped", async () => {
    const api = over([llamacppBackend(home.engine)]);
    const train = (await api.load({ path: model }, { nCtx: 512 })).nCtxTrain;
    expect(train).toBeGreaterThan(512);
    expect(await api.load({ path: model }, { nCtx: train + 1 }).catch(refusal)).toEqual({
      name: 'InvalidRequestError',
      code: 'invalid_parameter',
      param: 'nCtx',
    });
    // nCtx against the caller's own budget: theirs to settle (not a model this device cannot run, for a fallback).
    expect(await api.load({ path: model }, { nCtx: train, kvBudgetBytes: 1024 }).catch(refusal)).toEqual({
      name: 'InvalidRequestError',
      code: 'invalid_parameter',
      param: 'nCtx',
    });
    expect((await api.load({ path: model }, { nCtx: train })).nCtxTrain).toBe(train);
    expect((await api.info()).nCtx).toBe(train);
  });

  it("createEngine's and Node's thread counts: an integer from 1 to 16, else an error naming threads", async () => {
    for (const threads of [0, -1, 1.5, 17, Number.NaN, '2']) {
      expect(() => checkEngineOptions({ threads } as never), String(threads)).toThrow(
        expect.objectContaining({ code: 'invalid_parameter', details: { param: 'threads' } }),
      );
      expect(await createNodeEngine({ threads } as never).catch(refusal)).toMatchObject({ param: 'threads' });
    }
    expect(checkEngineOptions({ threads: 16, shared: 'tabs' })).toEqual({ backend: 'auto', shared: 'tabs' });
    expect(() => checkEngineOptions({ shared: '' })).toThrow(expect.objectContaining({ details: { param: 'shared' } }));
    expect(() => checkEngineOptions({ simd: 'fast' } as never)).toThrow(
      expect.objectContaining({ details: { param: 'simd' } }),
    );
    expect(() => checkEngineOptions({ cache: { minTokens: 0 } })).toThrow(
      expect.objectContaining({ details: { param: 'cache.minTokens' } }),
    );
  });
});
