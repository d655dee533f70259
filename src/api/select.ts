// Which engine a page runs and what stands beside it (createEngine's `backend`). Hearth's engine runs in its worker:
// on the GPU (the 'webgpu' build, gpu-engine.ts) when the browser has a WebGPU adapter (with shader-f16 or without:
// the build's shaders then compute in f32) and JSPI and the engine passes its self-test there, else on the CPU.
// wllama (WebGPU) goes in front of it only when the page names it and it passed its self-test against the CPU engine;
// a server (EngineOptions.fallback) comes last, for models this device cannot run. The result is a router over them
// (router.ts); engine.info().selection says what was chosen and why. A page that asked for a server alone starts no
// worker and does not come here (create-engine.ts).
import type { Backend } from '../contract.ts';
import type { BackendName, BackendSelection, ModelStorage, RemoteOptions } from '../types.ts';
import { llamacppBackend } from '../backends/llamacpp/backend.ts';
import { startEngineWorker } from '../backends/llamacpp/worker/client.ts';
import type { LastingWorker } from '../backends/llamacpp/worker/restart.ts';
import type { HostInit } from '../backends/llamacpp/worker/protocol.ts';
import { bounded } from './bounded.ts';
import { BackendRouter } from './router.ts';

type Adapter = NonNullable<BackendSelection['adapter']>;

interface GpuAdapterLike {
  features: { has(name: string): boolean };
  limits: { maxStorageBufferBindingSize: number; maxBufferSize: number };
  info?: { vendor?: string; architecture?: string; device?: string; description?: string; isFallbackAdapter?: boolean };
  /** Older browsers' place for it (before GPUAdapterInfo had it). */
  isFallbackAdapter?: boolean;
}

/** The browser's WebGPU adapter, if it offers one. */
async function requestAdapter(): Promise<GpuAdapterLike | null> {
  const gpu = (globalThis.navigator as { gpu?: { requestAdapter(): Promise<GpuAdapterLike | null> } } | undefined)?.gpu;
  if (!gpu) return null;
  try {
    return await gpu.requestAdapter();
  } catch {
    return null;
  }
}

function adapterOf(found: GpuAdapterLike): Adapter {
  return {
    vendor: found.info?.vendor ?? '',
    architecture: found.info?.architecture ?? '',
    device: found.info?.device ?? '',
    description: found.info?.description ?? '',
    shaderF16: found.features.has('shader-f16'),
    fallback: found.info?.isFallbackAdapter === true || found.isFallbackAdapter === true,
  };
}

/** The llama.cpp engine's worker, started: on the GPU or the CPU (`kind`), and why. */
export interface StartedWorker {
  worker: LastingWorker;
  kind: 'wasm' | 'webgpu';
  selection: BackendSelection;
  /** The adapter as the page sees it (wllama reads its buffer limits). */
  adapter: GpuAdapterLike | null;
}

/**
 * Starts the llama.cpp engine's worker: for 'webgpu' and 'auto' in its GPU build when the adapter qualifies and the
 * engine passes its self-test there (gpu-engine.ts), else — and for 'wasm' and 'wllama' — in the CPU build `init`
 * names. It never fails for want of a GPU: it runs on the CPU and says why in engine.info().selection.
 */
export async function startWorker(init: HostInit, requested: BackendName): Promise<StartedWorker> {
  const selection: BackendSelection = { requested, reason: '', adapter: null, selfTest: null };
  const found = requested === 'wasm' ? null : await requestAdapter();
  selection.adapter = found && adapterOf(found);
  if (requested === 'webgpu' || requested === 'auto') {
    const why = !found
      ? 'the browser offers no WebGPU adapter'
      : typeof (WebAssembly as { Suspending?: unknown }).Suspending !== 'function'
        ? 'this browser lacks JSPI (WebAssembly.Suspending), which the GPU build needs to wait for the GPU'
        : null;
    if (!why) {
      const { startGpuEngine } = await import('./gpu-engine.ts');
      const worker = await startGpuEngine({ ...init, gpuFallback: requested === 'auto' }, selection);
      if (worker) return { worker, kind: 'webgpu', selection, adapter: found };
    } else {
      selection.reason = `${why}: the engine runs on the CPU`;
    }
  } else if (requested === 'wasm') {
    selection.reason = 'the CPU engine (WebAssembly) was asked for';
  }
  return { worker: await startEngineWorker(init), kind: 'wasm', selection, adapter: found };
}

export interface SelectOptions {
  /** A server for the models this device cannot run (EngineOptions.fallback). */
  fallback?: RemoteOptions | null;
  wasmUrl: string;
  threads: number;
  maxModelBytes: number;
  /** Where the worker's model store keeps models (engine.info().storage). */
  storage: ModelStorage | null;
}

/**
 * The router over the started engine: alone (and the fallback server), or for 'wllama', wllama in front of it once
 * it passed its self-test against the engine — then what wllama cannot take is an error, not a quiet switch to the
 * engine. A failed self-test leaves the engine alone, with the reason in engine.info().selection.
 */
export async function selectBackends(started: StartedWorker, opts: SelectOptions): Promise<BackendRouter> {
  const home = started.worker.calls;
  const engine = llamacppBackend(home, started.kind);
  const { selection } = started;
  // The server backend is loaded only by a page that names a server: nothing goes to one unless the page configured it.
  const fallback = opts.fallback
    ? [new (await import('../backends/server/server.ts')).ServerBackend(opts.fallback, true)]
    : [];
  const router = (backends: Backend[]) => new BackendRouter(backends, selection, opts.storage);
  if (selection.requested !== 'wllama') return router([engine, ...fallback]);
  // Only pages that name wllama load it.
  const [{ WllamaBackend }, { selfTest }, { pageFiles }] = await Promise.all([
    import('../backends/wllama/wllama.ts'),
    import('./self-test.ts'),
    import('../core/models/page-files.ts'),
  ]);
  const gpu = new WllamaBackend({
    wasmUrl: opts.wasmUrl,
    threads: opts.threads,
    maxModelBytes: opts.maxModelBytes,
    bufferLimit: started.adapter?.limits.maxStorageBufferBindingSize ?? null,
    files: (request, control) => pageFiles(request, control, (r, c) => home.modelsFetch(r, c)),
  });
  try {
    selection.selfTest = await bounded(selfTest(home, gpu), "wllama's worker (WebGPU backend)");
  } catch (err) {
    void gpu.unload(); // whatever wllama started; not awaited, it may be the part that hangs
    selection.reason = `wllama failed its self-test: ${(err as Error).message}`;
    return router([engine, ...fallback]);
  }
  if (!selection.selfTest.passed) {
    selection.reason =
      `wllama computed different values than the CPU engine on the probe model ` +
      `(log-probabilities ${selection.selfTest.maxLogprobDiff.toFixed(3)} apart${selection.selfTest.sameTopTokens ? '' : ', another likeliest token'}): using the CPU engine`;
    return router([engine, ...fallback]);
  }
  selection.reason =
    `wllama passed its self-test (log-probabilities within ${selection.selfTest.maxLogprobDiff.toFixed(4)})` +
    (selection.adapter ? '' : '; the browser offers no WebGPU adapter, so wllama runs on its CPU build');
  return router([gpu, ...fallback]);
}
