// Hearth's engine on the GPU: the worker started with the 'webgpu' build (llama.cpp's WebGPU backend beneath the same
// engine, a single thread for what stays on the CPU), trusted only once the probe model reads the same on the GPU
// as on that engine's CPU (self-test.ts). Loaded only by pages whose browser offers an adapter that may run it.
import { BUILD_ID } from '../core/build.ts';
import type { BackendSelection } from '../types.ts';
import { startEngineWorker } from '../backends/llamacpp/worker/client.ts';
import type { LastingWorker } from '../backends/llamacpp/worker/restart.ts';
import type { HostInit } from '../backends/llamacpp/worker/protocol.ts';
import { bounded } from './bounded.ts';
import { gpuSelfTest, type SelfTest } from './self-test.ts';

/** A passed self-test is kept (localStorage) for this build, browser and adapter, for a week: a returning visitor's
 * engine starts without reading the probe twice. A failed one is not kept: it runs again next time. */
const PASS_KEY = 'hearth:gpu-self-test';
const PASS_KEPT_MS = 7 * 24 * 3600 * 1000;

/** The GPU engine's worker, or null (the CPU engine runs instead) with the reason in `selection`. */
export async function startGpuEngine(init: HostInit, selection: BackendSelection): Promise<LastingWorker | null> {
  let worker: LastingWorker | null = null;
  try {
    worker = await startEngineWorker({
      ...init,
      variant: 'webgpu',
      threads: 1,
      buildReason: "the WebGPU build: llama.cpp's WebGPU backend runs the layers, one thread the rest",
    });
    const gpu = worker.started?.gpu;
    if (!gpu) throw new Error("llama.cpp's WebGPU backend found no adapter");
    const id = JSON.stringify([
      BUILD_ID,
      globalThis.navigator?.userAgent,
      selection.adapter,
      gpu.adapter,
      gpu.shaderPath,
    ]);
    const kept = keptPass(id);
    selection.selfTest = kept ?? (await bounded(gpuSelfTest(worker.calls), "the GPU engine's self-test"));
    if (selection.selfTest.passed) {
      if (!kept) keepPass(id, selection.selfTest);
      selection.reason =
        `the GPU engine passed its self-test on ${gpu.adapter}${shaderNote(gpu.shaderPath)} (log-probabilities ` +
        `within ${selection.selfTest.maxLogprobDiff.toFixed(4)} of its CPU's${kept ? '; kept from an earlier start' : ''})`;
      return worker;
    }
    selection.reason =
      `the GPU engine computed different values on ${gpu.adapter} than on the CPU on the probe model ` +
      `(log-probabilities ${selection.selfTest.maxLogprobDiff.toFixed(3)} apart` +
      `${selection.selfTest.sameTopTokens ? '' : ', another likeliest token'}): the engine runs on the CPU`;
  } catch (err) {
    selection.reason = `the GPU engine could not start: ${(err as Error).message}; the engine runs on the CPU`;
  }
  worker?.terminate();
  return null;
}

/** The f32 path in plain words: what a visitor on such an adapter may wonder about. */
function shaderNote(path: 'f16' | 'f32'): string {
  return path === 'f32' ? ', its shaders in f32 (the adapter offers no shader-f16; f16 data stays 16-bit)' : '';
}

function keptPass(id: string): SelfTest | null {
  try {
    const kept = JSON.parse(globalThis.localStorage?.getItem(PASS_KEY) ?? 'null') as {
      id: string;
      at: number;
      result: SelfTest;
    } | null;
    const fresh = kept && kept.id === id && Date.now() - kept.at < PASS_KEPT_MS && kept.result?.passed === true;
    return fresh ? kept.result : null;
  } catch {
    return null; // no storage here (a sandboxed frame), or a record that is not ours
  }
}

function keepPass(id: string, result: SelfTest) {
  try {
    globalThis.localStorage?.setItem(PASS_KEY, JSON.stringify({ id, at: Date.now(), result }));
  } catch {
    // no storage: the next start tests again
  }
}
