// GPU against CPU: llama.cpp's WebGPU backend inside Hearth's WebGPU build (Dawn over lavapipe, a real adapter with
// shader-f16) against the single-thread CPU build, through the binding, on every fixture architecture and on the
// quantization types, on both shader paths: f16 arithmetic (the adapter's shader-f16) and f32 arithmetic over f16 data
// packed in 32-bit words (what adapters without shader-f16 run, forced here; wasm/patches/0028–0030). Greedy tokens must be
// the same; the log-probabilities of the CPU's top tokens within TOLERANCE; the two paths alike within it too.
// Run by `npm run test:webgpu` (Node 26 for JSPI, scripts/webgpu-node.mjs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaContext } from '../../src/backends/llamacpp/binding/context.ts';
import type { Llama } from '../../src/backends/llamacpp/binding/llama.ts';
import { LlamaModel } from '../../src/backends/llamacpp/binding/model.ts';
import { GPU_ARCHITECTURES as MODELS, GPU_LOGPROB_TOLERANCE, GPU_QUANTS as QUANTS, QUANT_RATIO } from '../compare.ts';
import { argmax, openLlama } from '../helpers.ts';

/** Unquantized models: GPU_LOGPROB_TOLERANCE (test/compare.ts says what it allows for). */
const TOLERANCE = GPU_LOGPROB_TOLERANCE;
const TOP = 5;
const STEPS = 8;
const PROMPT = 'Hello there, how are you?';
const ALL_LAYERS = 999;

type ShaderPath = 'f16' | 'f32';
let cpu: Llama;
const gpus = {} as Record<ShaderPath, Llama>;
const seen: Record<string, number> = {};

beforeAll(async () => {
  cpu = await openLlama();
  gpus.f16 = await openLlama(undefined, 'webgpu');
  gpus.f32 = await openLlama(undefined, 'webgpu', { shaderF16: false });
});

afterAll(() => {
  console.log(`largest |Δ logprob| per model: ${JSON.stringify(seen)}`);
});

interface Run {
  tokens: number[];
  /** Per step: the log-probabilities of every token (log-softmax of the logits). */
  logprobs: Float32Array[];
}

function logSoftmax(logits: Float32Array): Float32Array {
  const max = logits.reduce((m, v) => Math.max(m, v), -Infinity);
  const sum = logits.reduce((s, v) => s + Math.exp(v - max), 0);
  const log = Math.log(sum) + max;
  return logits.map((v) => v - log);
}

const topIds = (a: Float32Array, n: number) =>
  Array.from(a.keys())
    .sort((x, y) => a[y]! - a[x]!)
    .slice(0, n);

/** A model and a one-sequence context; feed() decodes tokens at `from` and returns the log-probabilities after them. */
async function session(llama: Llama, name: string, gpuLayers: number) {
  const model = (await LlamaModel.load(llama, `/models/${name}.gguf`, { gpuLayers }))!;
  expect(model).toBeTruthy();
  const ctx = await LlamaContext.create(model, {
    nCtx: 256,
    nBatch: 64,
    nUbatch: 64,
    nSeqMax: 1,
    threads: 1,
    typeK: 'f16',
    typeV: 'f16',
    flashAttn: 0,
  });
  return {
    model,
    ctx,
    async feed(tokens: number[], from: number) {
      const status = await ctx.decode(
        tokens,
        tokens.map((_, k) => from + k),
        tokens.map(() => 0),
        tokens.map((_, k) => k === tokens.length - 1),
      );
      expect(status).toBe(0);
      return logSoftmax(ctx.logits(tokens.length - 1));
    },
    free() {
      ctx.free();
      model.free();
    },
  };
}

/** The runs greedy() has decoded, per engine, by their arguments. */
const kept = new Map<Llama, Map<string, Promise<Run>>>();

/** Greedy decoding of `prompt` then STEPS tokens, one token per decode after the prompt; with `forced`, those tokens
 * are fed instead of the likeliest (to read another model's log-probabilities along the same path). Each run is
 * decoded once and kept: a run gives the same bytes every time (replay.test.ts, e2e/determinism.spec.ts), and the
 * comparisons of the two shader paths and of each path with the CPU share runs (a minute of CI's lavapipe). */
function greedy(llama: Llama, name: string, gpuLayers: number, prompt?: number[], forced?: number[]): Promise<Run> {
  const key = [name, gpuLayers, prompt?.join(','), forced?.join(',')].join('|');
  let runs = kept.get(llama);
  if (!runs) kept.set(llama, (runs = new Map()));
  let run = runs.get(key);
  if (!run) runs.set(key, (run = decodeGreedy(llama, name, gpuLayers, prompt, forced)));
  return run;
}

async function decodeGreedy(
  llama: Llama,
  name: string,
  gpuLayers: number,
  prompt?: number[],
  forced?: number[],
): Promise<Run> {
  const s = await session(llama, name, gpuLayers);
  try {
    let tokens = prompt ?? Array.from(s.model.tokenize(PROMPT, true, false));
    let pos = 0;
    const run: Run = { tokens: [], logprobs: [] };
    for (let step = 0; step < STEPS; step++) {
      const logprobs = await s.feed(tokens, pos);
      const next = forced?.[step] ?? argmax(logprobs);
      run.tokens.push(next);
      run.logprobs.push(logprobs);
      pos += tokens.length;
      tokens = [next];
    }
    return run;
  } finally {
    s.free();
  }
}

/** The largest |Δ| over the steps of the log-probabilities of `a`'s top tokens. */
function largestDiff(a: Run, b: Run): number {
  let worst = 0;
  a.logprobs.forEach((lp, step) => {
    for (const id of topIds(lp, TOP)) worst = Math.max(worst, Math.abs(lp[id]! - b.logprobs[step]![id]!));
  });
  return worst;
}

/** `run` answers as `reference` does: the same greedy tokens, the reference's top log-probabilities within TOLERANCE
 * (the largest difference kept in `seen` under `key`). */
function expectAlike(reference: Run, run: Run, key: string) {
  seen[key] = Number(largestDiff(reference, run).toFixed(4));
  expect(run.tokens).toEqual(reference.tokens);
  expect(seen[key]).toBeLessThan(TOLERANCE);
}

/** A quantized qwen2-hello-256 on two backends (or shader paths): the same greedy tokens, and `run` no further from the
 * f32 model it was made from than QUANT_RATIO times `reference` is, plus TOLERANCE (the ratio kept in `seen`). */
async function expectQuantAlike(reference: Run, run: Run, key: string) {
  expect(run.tokens).toEqual(reference.tokens);
  // The f32 source fed the same tokens (the same tokenizer): how far quantization moved each.
  const source = await greedy(cpu, 'qwen2-hello-256', 0, undefined, reference.tokens);
  const referenceOff = largestDiff(source, reference);
  const off = largestDiff(source, run);
  seen[key] = Number((off / referenceOff).toFixed(2));
  expect(off).toBeLessThan(QUANT_RATIO * referenceOff + TOLERANCE);
}

describe.each(['f16', 'f32'] as const)('the WebGPU build, %s shaders', (path) => {
  let gpu: Llama;
  beforeAll(() => {
    gpu = gpus[path];
  });

  it('found the adapter (Dawn over lavapipe) and runs llama.cpp on it', () => {
    expect(gpu.gpu).toBeTruthy();
    expect(gpu.gpuShaderF16).toBe(path === 'f16');
    expect(cpu.gpu).toBeNull();
  });

  it.each(MODELS)('%s: greedy tokens equal, top-5 log-probabilities within the tolerance', async (name) => {
    expectAlike(await greedy(cpu, name, 0), await greedy(gpu, name, ALL_LAYERS), `${path} ${name}`);
  });

  it.each(QUANTS)('qwen2-hello-256-%s: greedy tokens equal; no further from the f32 model than the CPU', async (q) => {
    const name = `qwen2-hello-256-${q}`;
    await expectQuantAlike(await greedy(cpu, name, 0), await greedy(gpu, name, ALL_LAYERS), `${path} ${name}`);
  });

  it.each([
    ['qwen2-hello', 'GPU', 'CPU'],
    ['qwen2-hello', 'CPU', 'GPU'],
    ['mamba-hello', 'GPU', 'CPU'],
    ['qwen35-hello', 'CPU', 'GPU'],
  ] as const)(
    '%s: a state saved on the %s restores on the %s and answers as a cold engine there',
    async (name, from, _to) => {
      const [a, b] = from === 'GPU' ? [gpu, cpu] : [cpu, gpu];
      const layers = (llama: Llama) => (llama === gpu ? ALL_LAYERS : 0);
      const saver = await session(a, name, layers(a));
      const loader = await session(b, name, layers(b));
      try {
        const prompt = Array.from(saver.model.tokenize(PROMPT, true, false));
        const head = prompt.slice(0, -1);
        await saver.feed(head, 0);
        const state = await saver.ctx.stateGet(0);
        expect(await loader.ctx.stateSet(state, 0)).toBe(true);
        const restored = await loader.feed(prompt.slice(-1), head.length);
        // The same prompt read cold where the state went: cached = cold, across backends.
        await loader.ctx.clear();
        const cold = await loader.feed(prompt, 0);
        const top = topIds(cold, TOP);
        expect(argmax(restored)).toBe(argmax(cold));
        expect(Math.max(...top.map((id) => Math.abs(restored[id]! - cold[id]!)))).toBeLessThan(TOLERANCE);
      } finally {
        saver.free();
        loader.free();
      }
    },
  );

  it('the same model with no layer on the GPU answers as the CPU build does, exactly', async () => {
    const onCpu = await greedy(cpu, 'qwen2-hello', 0);
    const inGpuBuild = await greedy(gpu, 'qwen2-hello', 0);
    expect(inGpuBuild.tokens).toEqual(onCpu.tokens);
    expect(largestDiff(onCpu, inGpuBuild)).toBe(0);
  });
});

describe('the two shader paths', () => {
  it.each(MODELS)(
    '%s: f32 arithmetic over packed f16 answers as f16 arithmetic does (greedy tokens equal, within the tolerance)',
    async (name) => {
      const f16 = await greedy(gpus.f16, name, ALL_LAYERS);
      expectAlike(f16, await greedy(gpus.f32, name, ALL_LAYERS), `f32 vs f16 ${name}`);
    },
  );

  // The f16 path rounds dequantized weights and activations to f16 where the f32 path keeps f32: on these random
  // models that alone moves log-probabilities by up to 0.25. Measured as above, against the f32 source model.
  it.each(QUANTS)(
    'qwen2-hello-256-%s: greedy tokens equal; no further from the f32 model than the f16 path',
    async (q) => {
      const name = `qwen2-hello-256-${q}`;
      const f16 = await greedy(gpus.f16, name, ALL_LAYERS);
      await expectQuantAlike(f16, await greedy(gpus.f32, name, ALL_LAYERS), `f32 vs f16 ${name}`);
    },
  );
});
