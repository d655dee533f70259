// A GPU proves itself before Hearth trusts it: Linux Chrome on ANGLE advertises shader-f16 and computes wrong
// results, and Firefox's WebGPU has returned wrong values for llama.cpp. The probe model's prompt (probe-model.ts) is
// read on the CPU and on the GPU; their next-token log-probabilities must agree. Hearth's GPU engine is checked
// against itself with no layer on the GPU (gpuSelfTest), wllama against the CPU engine (selfTest).
import type { BackendCalls } from '../contract.ts';
import { resolveRequest } from '../core/chat/request.ts';
import type { BackendSelection, ChatCompletionChunk, ModelSource } from '../types.ts';
import { probeModel, PROBE_PROMPT, SPEED_PROBE } from './probe-model.ts';
import type { WllamaBackend } from '../backends/wllama/wllama.ts';

export type SelfTest = NonNullable<BackendSelection['selfTest']>;
export type TopLogprobs = Array<{ token: string; logprob: number }>;

const TOP = 8;
/** Over the likeliest tokens, log-probabilities may differ by this much (f16 arithmetic on a GPU: ~1e-2). */
const TOLERANCE = 0.1;

/** `wasmSource`: where the wasm engine reads the probe (default: the in-memory Blob; in Node, a file). */
export async function selfTest(
  wasm: BackendCalls,
  gpu: Pick<WllamaBackend, 'load' | 'promptLogprobs' | 'unload'>,
  wasmSource?: ModelSource,
): Promise<SelfTest> {
  const blob = new Blob([probeModel() as BlobPart]);
  await wasm.load({ source: wasmSource ?? blob, options: { nCtx: 256, store: false } });
  let expected: TopLogprobs;
  try {
    expected = await probeLogprobs(wasm);
  } finally {
    await wasm.unload();
  }
  await gpu.load({ source: new File([blob], 'hearth-probe.gguf'), options: { nCtx: 256, store: false } });
  try {
    return compareProbe(expected, await gpu.promptLogprobs(PROBE_PROMPT, TOP));
  } finally {
    await gpu.unload();
  }
}

/**
 * Hearth's engine in its GPU build: the probe with no layer on the GPU, then with every layer there, in the same
 * engine, so that only the GPU's arithmetic differs. `source`: where it reads the probe (default: the in-memory Blob;
 * in Node, a file).
 */
export async function gpuSelfTest(engine: BackendCalls, source?: ModelSource): Promise<SelfTest> {
  const run = onProbe(engine, source ?? new Blob([probeModel() as BlobPart]), () => probeLogprobs(engine));
  return compareProbe(await run(0), await run());
}

/** `read` with a probe loaded into `engine` with `gpuLayers` on the GPU (all when undefined), unloaded after. */
function onProbe<T>(engine: BackendCalls, source: ModelSource, read: () => Promise<T>) {
  return async (gpuLayers?: number): Promise<T> => {
    await engine.load({ source, options: { nCtx: 256, store: false, gpuLayers } });
    try {
      return await read();
    } finally {
      await engine.unload();
    }
  };
}

/** Decode speed of the speed probe, tokens/s: on the GPU, and on the same engine's CPU (one thread). */
export interface SpeedTest {
  gpuTps: number;
  cpuTps: number;
}

/** Tokens the speed probe generates per timing (after one untimed run: pipelines compile on first use). */
const SPEED_TOKENS = 8;

/**
 * The GPU build's decode speed on the speed probe (probe-model.ts), every layer on the GPU and none, in the same
 * engine: what 'auto' weighs against the CPU engine (gpu-engine.ts). `source` as for gpuSelfTest.
 */
export async function gpuSpeedTest(engine: BackendCalls, source?: ModelSource): Promise<SpeedTest> {
  const run = onProbe(engine, source ?? new Blob([probeModel(SPEED_PROBE) as BlobPart]), async () => {
    await decodeTps(engine);
    return decodeTps(engine);
  });
  return { cpuTps: await run(0), gpuTps: await run() };
}

/** Tokens/s of a greedy answer to the probe's prompt, as the engine timed its decode. */
async function decodeTps(engine: BackendCalls): Promise<number> {
  const { onProgress: _, ...request } = resolveRequest({
    messages: [{ role: 'user', content: PROBE_PROMPT }],
    max_tokens: SPEED_TOKENS,
    temperature: 0,
  });
  let timings: ChatCompletionChunk['timings'];
  await engine.complete(request, { onChunk: (c) => void (timings ??= c.timings) });
  if (!timings || timings.predicted_n < 2 || !(timings.predicted_ms > 0)) {
    throw new Error(`the speed probe's answer had no decode timings (${JSON.stringify(timings ?? null)})`);
  }
  return (timings.predicted_n / timings.predicted_ms) * 1000;
}

async function probeLogprobs(wasm: BackendCalls): Promise<TopLogprobs> {
  const { onProgress: _, ...request } = resolveRequest({
    messages: [{ role: 'user', content: PROBE_PROMPT }],
    max_tokens: 1,
    temperature: 0,
    logprobs: true,
    top_logprobs: TOP,
  });
  let first: ChatCompletionChunk | null = null;
  await wasm.complete(request, { onChunk: (c) => void (first ??= c.choices[0]?.logprobs ? c : null) });
  const top = (first as ChatCompletionChunk | null)?.choices[0]?.logprobs?.content?.[0]?.top_logprobs ?? [];
  return top.map((t) => ({ token: t.token, logprob: t.logprob }));
}

/**
 * Whether `got` (the candidate backend) agrees with `expected` (the wasm engine): the same likeliest token, and the
 * expected top tokens' log-probabilities within TOLERANCE (a token missing from `got` counts as a mismatch).
 */
function compareProbe(expected: TopLogprobs, got: TopLogprobs): SelfTest {
  const byToken = new Map(got.map((t) => [t.token, t.logprob]));
  let maxLogprobDiff = 0;
  for (const t of expected.slice(0, 5)) {
    const g = byToken.get(t.token);
    maxLogprobDiff = Math.max(maxLogprobDiff, g === undefined ? Infinity : Math.abs(g - t.logprob));
  }
  const sameTopTokens = expected.length > 0 && got.length > 0 && expected[0]!.token === got[0]!.token;
  return { passed: sameTopTokens && maxLogprobDiff <= TOLERANCE, maxLogprobDiff, sameTopTokens };
}
