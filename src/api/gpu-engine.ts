// Hearth's engine on the GPU: the worker started with the 'webgpu' build (llama.cpp's WebGPU backend beneath the same
// engine, a single thread for what stays on the CPU), trusted only once the probe model reads the same on the GPU
// as on that engine's CPU (self-test.ts), and under 'auto' chosen only where it decodes faster than the CPU engine
// would: software adapters (lavapipe, SwiftShader: a VM, a browser's fallback) decode at a few percent of the CPU
// engine's speed. Loaded only by pages whose browser offers an adapter that may run it.
import { BUILD_ID } from '../core/build.ts';
import type { BackendSelection } from '../types.ts';
import { startEngineWorker } from '../backends/llamacpp/worker/client.ts';
import type { LastingWorker } from '../backends/llamacpp/worker/restart.ts';
import type { HostInit } from '../backends/llamacpp/worker/protocol.ts';
import { bounded } from './bounded.ts';
import { gpuSelfTest, gpuSpeedTest, type SelfTest, type SpeedTest } from './self-test.ts';

/** A passed self-test and the speeds measured after it are kept (localStorage) for this build, browser, adapter and
 * thread count, for a week: a returning visitor's engine starts without reading the probes again. A failed self-test
 * is not kept: it runs again next time. */
const PASS_KEY = 'hearth:gpu-self-test';
const PASS_KEPT_MS = 7 * 24 * 3600 * 1000;

/**
 * The CPU engine's decode speed at `threads` threads from the GPU build's at one thread: measured on the benchmark
 * model, 16 threads decode 6.0× one thread (Intel Xeon) and 2 threads 1.6× (AMD EPYC), both about threads^0.65.
 */
export const cpuSpeedAt = (oneThread: number, threads: number) => oneThread * Math.max(1, threads) ** 0.65;

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
      init.threads,
    ]);
    const kept = keptPass(id);
    selection.selfTest = kept?.result ?? (await bounded(gpuSelfTest(worker.calls), "the GPU engine's self-test"));
    if (selection.selfTest.passed) {
      const auto = selection.requested === 'auto';
      // Timed under 'auto' only: a page that asked for 'webgpu' gets the GPU engine either way.
      const timed = auto && !kept?.speed;
      const known = timed ? await bounded(gpuSpeedTest(worker.calls), "the GPU engine's speed test") : kept?.speed;
      if (!kept || timed) keepPass(id, selection.selfTest, known ?? null);
      const speed = auto ? known : null;
      const passed =
        `the GPU engine passed its self-test on ${gpu.adapter}${shaderNote(gpu.shaderPath)} (log-probabilities ` +
        `within ${selection.selfTest.maxLogprobDiff.toFixed(4)} of its CPU's${kept ? '; kept from an earlier start' : ''})`;
      if (!speed) {
        selection.reason = passed;
        return worker;
      }
      const cpu = cpuSpeedAt(speed.cpuTps, init.threads);
      selection.speed = { gpuTps: speed.gpuTps, cpuTps: cpu, cpuThreads: init.threads };
      const figures =
        `it decodes the speed probe at ${speed.gpuTps.toFixed(1)} tokens/s, the CPU engine at about ${cpu.toFixed(1)} ` +
        `(${speed.cpuTps.toFixed(1)} on one thread, ${init.threads} here)` +
        (selection.adapter?.fallback ? '; the browser calls this adapter a software one' : '');
      if (speed.gpuTps >= cpu) {
        selection.reason = `${passed}; ${figures}: the GPU engine runs`;
        return worker;
      }
      selection.reason = `${passed}, but ${figures}: the CPU engine runs, the faster here`;
      worker.terminate();
      return null;
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

interface Kept {
  result: SelfTest;
  speed: SpeedTest | null;
}

/** The kept record for `id`, if it is fresh and whole (a stored record is checked like any input). */
function keptPass(id: string): Kept | null {
  try {
    const kept = JSON.parse(globalThis.localStorage?.getItem(PASS_KEY) ?? 'null') as {
      id: string;
      at: number;
    } & Kept;
    const fresh = kept && kept.id === id && Date.now() - kept.at < PASS_KEPT_MS && kept.result?.passed === true;
    if (!fresh) return null;
    const tps = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0;
    const speed = kept.speed && tps(kept.speed.gpuTps) && tps(kept.speed.cpuTps) ? kept.speed : null;
    return { result: kept.result, speed };
  } catch {
    return null; // no storage here (a sandboxed frame), or a record that is not ours
  }
}

function keepPass(id: string, result: SelfTest, speed: SpeedTest | null) {
  try {
    globalThis.localStorage?.setItem(PASS_KEY, JSON.stringify({ id, at: Date.now(), result, speed }));
  } catch {
    // no storage: the next start tests again
  }
}
