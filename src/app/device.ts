// What this device offers a model (fit.ts): memory as the browser reports it, free storage (the model store's own
// figures), the engine that will run the model, and a short measured probe of its speed — kept for a month, so the
// catalogue opens at once next time.
import type { EngineInfo, ModelStoreUsage } from '../types.ts';
import type { DeviceFacts } from './fit.ts';

const PROBE = 'hearth-speed-probe';
const PROBE_MAX_AGE_MS = 30 * 24 * 3600 * 1000;
const PROBE_MS = 700;
/**
 * The share of the probe's bytes a second that decoding reaches. CPU: calibrated on the 2-core AMD EPYC (Zen 5) here:
 * the probe's loop read 20.6 GB/s on 2 threads (V8, as in Chromium), and the CPU engine decoded the benchmark model
 * (Qwen2.5-0.5B shapes, Q8_0, 531 MB) at 28.6 tokens/s on 2 threads (docs/benchmarks.md, "Quantizations"): 15.2 GB/s of
 * weights, 0.74 of the probe. K-quants spend more arithmetic per byte, so 0.6 is taken. GPU: a buffer copy moves each
 * byte twice (read, write) where a decode reads its weights once; half is taken, and ~500 dispatches cost ~6 ms a token
 * whatever the model (measured on an H100 and an H200: docs/benchmarks.md, "On a GPU"), added in fit.ts.
 */
const CPU_DECODE_SHARE = 0.6;
const GPU_DECODE_SHARE = 0.5;
const GPU_TOKEN_OVERHEAD_S = 0.006;

export interface Probe {
  backend: 'webgpu' | 'wasm';
  /** The engine's threads the probe ran on (CPU), or the adapter (GPU): a change means probing again. */
  on: string;
  bytesPerSecond: number;
  at: number;
}

/** Storage the site may still use, from the model store's usage (engine.models.usage()); null when unknown. */
export const freeStorage = (usage: ModelStoreUsage | null) =>
  usage && usage.used !== null && usage.quota !== null ? Math.max(0, usage.quota - usage.used) : null;

/**
 * The facts modelFit() needs, with a probe (measured now unless one for this backend is kept); `usage` is the model
 * store's.
 */
export async function deviceFacts(
  info: EngineInfo,
  usage: ModelStoreUsage | null,
): Promise<DeviceFacts & { probe: Probe | null }> {
  const backend = info.backend === 'webgpu' ? 'webgpu' : 'wasm';
  const memory = (navigator as { deviceMemory?: number }).deviceMemory;
  const adapter = backend === 'webgpu' ? await navigator.gpu?.requestAdapter().catch(() => null) : null;
  const on = backend === 'webgpu' ? (info.gpu?.adapter ?? 'GPU') : `${info.threads} threads`;
  let probe = keptProbe(backend, on);
  probe ??= await runProbe(backend, on, info.threads, adapter ?? null).catch(() => null);
  const share = backend === 'webgpu' ? GPU_DECODE_SHARE : CPU_DECODE_SHARE;
  return {
    deviceMemoryGiB: typeof memory === 'number' && memory > 0 ? memory : null,
    freeStorage: freeStorage(usage),
    backend,
    decodeBytesPerSecond: probe ? probe.bytesPerSecond * share : null,
    gpuBindingLimit: adapter?.limits.maxStorageBufferBindingSize ?? null,
    tokenOverheadSeconds: backend === 'webgpu' ? GPU_TOKEN_OVERHEAD_S : 0,
    probe,
  };
}

function keptProbe(backend: Probe['backend'], on: string): Probe | null {
  try {
    const p = JSON.parse(localStorage.getItem(PROBE) ?? 'null') as Probe | null;
    const fresh =
      p && Number.isFinite(p.bytesPerSecond) && p.bytesPerSecond > 0 && Date.now() - p.at < PROBE_MAX_AGE_MS;
    return fresh && p.backend === backend && p.on === on ? p : null;
  } catch {
    return null;
  }
}

async function runProbe(
  backend: Probe['backend'],
  on: string,
  threads: number,
  adapter: GPUAdapter | null,
): Promise<Probe> {
  const bytesPerSecond = backend === 'webgpu' ? await gpuProbe(adapter) : await cpuProbe(Math.max(1, threads));
  const probe = { backend, on, bytesPerSecond, at: Date.now() };
  try {
    localStorage.setItem(PROBE, JSON.stringify(probe));
  } catch {
    // not kept: probed again next time
  }
  return probe;
}

/** Bytes a second that `threads` workers read together, as the engine's threads do. */
async function cpuProbe(threads: number): Promise<number> {
  const workers = Array.from(
    { length: threads },
    () => new Worker(new URL('./probe-worker.ts', import.meta.url), { type: 'module' }),
  );
  try {
    const rates = await Promise.all(
      workers.map(
        (w) =>
          new Promise<number>((resolve, reject) => {
            w.onmessage = (e: MessageEvent<{ bytesPerSecond: number }>) => resolve(e.data.bytesPerSecond);
            w.onerror = (e) => reject(new Error(e.message));
            w.postMessage({ ms: PROBE_MS });
          }),
      ),
    );
    return rates.reduce((a, b) => a + b, 0);
  } finally {
    for (const w of workers) w.terminate();
  }
}

/** Bytes a second a GPU buffer copy moves (read and written), on the adapter the GPU engine uses. */
async function gpuProbe(adapter: GPUAdapter | null): Promise<number> {
  if (!adapter) throw new Error('no adapter');
  const device = await adapter.requestDevice();
  try {
    const size = Math.min(128 * 1024 ** 2, adapter.limits.maxBufferSize) & ~3;
    const usage = 0x4 | 0x8; // GPUBufferUsage.COPY_SRC | COPY_DST: the project's TypeScript declares no WebGPU globals
    const [a, b] = [device.createBuffer({ size, usage }), device.createBuffer({ size, usage })];
    const copy = async (times: number) => {
      const enc = device.createCommandEncoder();
      for (let i = 0; i < times; i++) enc.copyBufferToBuffer(a!, 0, b!, 0, size);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
    };
    await copy(1); // warm-up: the first submit pays for setting up
    let times = 4;
    for (;;) {
      const t0 = performance.now();
      await copy(times);
      const ms = performance.now() - t0;
      if (ms > PROBE_MS / 4 || times >= 4096) return (2 * size * times * 1000) / ms;
      times *= 4;
    }
  } finally {
    device.destroy();
  }
}
