// Which backends a page's engine uses beside the llama.cpp engine's worker (createEngine's `backend`), in order:
// wllama (WebGPU) goes first when the adapter qualifies ('auto': shader-f16) and it passed its self-test against the
// llama.cpp engine, which answers whenever WebGPU is not used; a server (EngineOptions.fallback) last, for models this
// device cannot run. The result is a router over them (router.ts); engine.info().selection says what was chosen and
// why. A page that asked for a server alone starts no worker and does not come here (create-engine.ts).
import type { Backend, ServedCalls } from '../contract.ts';
import { EngineError } from '../errors.ts';
import { cspError, watchCsp } from '../core/csp.ts';
import type { BackendName, BackendSelection, ModelStorage, RemoteOptions } from '../types.ts';
import { llamacppBackend } from '../backends/llamacpp/backend.ts';
import { BackendRouter } from './router.ts';

type Adapter = NonNullable<BackendSelection['adapter']>;

/** The self-test loads wllama (its worker and wasm) and a probe model: seconds. One that has not ended by then never
 * will (a worker the page's policy blocked, a wedged GPU), and the engine falls back to wasm. */
const SELF_TEST_TIMEOUT_MS = 60_000;

interface GpuAdapterLike {
  features: { has(name: string): boolean };
  limits: { maxStorageBufferBindingSize: number; maxBufferSize: number };
  info?: { vendor?: string; architecture?: string; device?: string; description?: string };
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

export interface SelectOptions {
  requested: BackendName;
  /** A server for the models this device cannot run (EngineOptions.fallback). */
  fallback?: RemoteOptions | null;
  wasmUrl: string;
  threads: number;
  maxModelBytes: number;
  /** Where the worker's model store keeps models (engine.info().storage). */
  storage: ModelStorage | null;
}

/**
 * The router for `requested`: 'wasm' alone; for 'webgpu' and 'auto', wllama first when it may run (an adapter with
 * shader-f16 for 'auto'; for both, a passed self-test), with wasm after it under 'auto' for models wllama cannot take.
 * It never fails for want of WebGPU: it falls back to wasm and says why in engine.info().selection. `home`: the
 * llama.cpp engine's worker, whose model store wllama reads too.
 */
export async function selectBackends(home: ServedCalls, opts: SelectOptions): Promise<BackendRouter> {
  const wasm = llamacppBackend(home);
  // The server backend is loaded only by a page that names a server: nothing goes to one unless the page configured it.
  const fallback = opts.fallback
    ? [new (await import('../backends/server/server.ts')).ServerBackend(opts.fallback, true)]
    : [];
  const router = (selection: BackendSelection, backends: Backend[]) =>
    new BackendRouter(backends, selection, opts.storage);
  const only = (selection: BackendSelection, ...backends: Backend[]) =>
    router(selection, [...backends, wasm, ...fallback]);
  if (opts.requested === 'wasm') {
    return only({ requested: 'wasm', reason: 'the WebAssembly engine was asked for', adapter: null, selfTest: null });
  }
  const found = await requestAdapter();
  const adapter: Adapter | null = found
    ? {
        vendor: found.info?.vendor ?? '',
        architecture: found.info?.architecture ?? '',
        device: found.info?.device ?? '',
        description: found.info?.description ?? '',
        shaderF16: found.features.has('shader-f16'),
      }
    : null;
  const selection: BackendSelection = { requested: opts.requested, reason: '', adapter, selfTest: null };
  if (opts.requested === 'auto' && !adapter?.shaderF16) {
    selection.reason = adapter
      ? "the WebGPU adapter lacks shader-f16, which llama.cpp's WebGPU backend needs"
      : 'the browser offers no WebGPU adapter';
    return only(selection);
  }
  // Only pages that may use WebGPU load wllama's side (and wllama itself, once the adapter qualifies).
  const [{ WllamaBackend }, { selfTest }, { pageFiles }] = await Promise.all([
    import('../backends/wllama/wllama.ts'),
    import('../backends/wllama/self-test.ts'),
    import('../core/models/page-files.ts'),
  ]);
  const gpu = new WllamaBackend({
    wasmUrl: opts.wasmUrl,
    threads: opts.threads,
    maxModelBytes: opts.maxModelBytes,
    bufferLimit: found?.limits.maxStorageBufferBindingSize ?? null,
    files: (request, control) => pageFiles(request, control, (r, c) => home.modelsFetch(r, c)),
  });
  try {
    selection.selfTest = await bounded(selfTest(home, gpu));
  } catch (err) {
    void gpu.unload(); // whatever wllama started; not awaited, it may be the part that hangs
    selection.reason = `the WebGPU backend failed its self-test: ${(err as Error).message}`;
    return only(selection);
  }
  if (!selection.selfTest.passed) {
    selection.reason =
      `the WebGPU backend computed different values than the wasm engine on the probe model ` +
      `(log-probabilities ${selection.selfTest.maxLogprobDiff.toFixed(3)} apart${selection.selfTest.sameTopTokens ? '' : ', another likeliest token'}): using wasm`;
    return only(selection);
  }
  selection.reason =
    `the WebGPU backend passed its self-test (log-probabilities within ${selection.selfTest.maxLogprobDiff.toFixed(4)})` +
    (adapter ? '' : '; the browser offers no WebGPU adapter, so wllama runs on its CPU build');
  // A forced 'webgpu' has no fallback: what wllama cannot take is an error, not a quiet switch to wasm.
  return opts.requested === 'webgpu' ? router(selection, [gpu, ...fallback]) : only(selection, gpu);
}

/** The self-test, or an EngineError as soon as the page's CSP blocks part of it, or when it takes too long. */
function bounded<T>(test: Promise<T>): Promise<T> {
  let stop = () => {};
  const failed = new Promise<never>((_, reject) => {
    const csp = watchCsp(undefined, (v) => reject(cspError("wllama's worker (WebGPU backend)", v)));
    const timer = setTimeout(
      () => reject(new EngineError(`it did not end within ${SELF_TEST_TIMEOUT_MS / 1000} s`, 'start_timeout')),
      SELF_TEST_TIMEOUT_MS,
    );
    stop = () => {
      csp.stop();
      clearTimeout(timer);
    };
  });
  return Promise.race([test, failed]).finally(stop);
}
