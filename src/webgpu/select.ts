// Backend choice on the page (createEngine's `backend` other than 'wasm'). The wasm engine's worker always starts: it
// keeps the model store and the KV cache, runs the self-test's reference, and answers whenever WebGPU is not used.
// BackendSwitch is the EngineCore the public API sits on: each load goes to wllama (WebGPU) or to the wasm engine,
// and every later call to the one holding the model.
import type { CallControl, CompletionRequest, EngineCore, LoadRequest } from '../contract.ts';
import { readGgufHeader, tensorBytes } from '../engine/gguf/reader.ts';
import { idbBackend } from '../engine/models/idb.ts';
import { storedFiles } from '../engine/models/opfs.ts';
import { checkModelFile } from '../engine/gguf/check.ts';
import { EngineError } from '../errors.ts';
import { cspError, watchCsp } from '../worker/csp.ts';
import { blobFile } from '../engine/models/file.ts';
import { openSource } from '../engine/models/source.ts';
import type { Backend, BackendSelection, EngineInfo, ModelInfo, ModelSource, StoredModelRef } from '../types.ts';
import { selfTest } from './self-test.ts';
import { type ModelBlobs, WllamaCore } from './wllama-core.ts';
import { formatBytes } from '../bytes.ts';
import { isRemoteSource } from '../engine/models/remote.ts';

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

export interface SwitchOptions {
  requested: Exclude<Backend, 'wasm'>;
  wasmUrl: string;
  threads: number;
  maxModelBytes: number;
}

/**
 * The core for backend 'webgpu' or 'auto': decides whether wllama may run (an adapter with shader-f16 for 'auto';
 * for both, a passed self-test) and returns the switch. It never fails for want of WebGPU: it falls back to wasm and
 * says why in engine.info().selection.
 */
export async function backendSwitch(wasm: EngineCore, opts: SwitchOptions): Promise<EngineCore> {
  const found = await requestAdapter();
  const adapter: Adapter | null = found ? {
    vendor: found.info?.vendor ?? '', architecture: found.info?.architecture ?? '', device: found.info?.device ?? '',
    description: found.info?.description ?? '', shaderF16: found.features.has('shader-f16'),
  } : null;
  const selection: BackendSelection = { requested: opts.requested, reason: '', adapter, selfTest: null };
  if (opts.requested === 'auto' && !adapter?.shaderF16) {
    selection.reason = adapter ? 'the WebGPU adapter lacks shader-f16, which llama.cpp\'s WebGPU backend needs' : 'the browser offers no WebGPU adapter';
    return new BackendSwitch(wasm, null, selection, null, opts.maxModelBytes);
  }
  const gpu = new WllamaCore({ wasmUrl: opts.wasmUrl, threads: opts.threads });
  try {
    selection.selfTest = await bounded(selfTest(wasm, gpu));
  } catch (err) {
    void gpu.unload(); // whatever wllama started; not awaited, it may be the part that hangs
    selection.reason = `the WebGPU backend failed its self-test: ${(err as Error).message}`;
    return new BackendSwitch(wasm, null, selection, null, opts.maxModelBytes);
  }
  if (!selection.selfTest.passed) {
    selection.reason = `the WebGPU backend computed different values than the wasm engine on the probe model ` +
      `(log-probabilities ${selection.selfTest.maxLogprobDiff.toFixed(3)} apart${selection.selfTest.sameTopTokens ? '' : ', another likeliest token'}): using wasm`;
    return new BackendSwitch(wasm, null, selection, null, opts.maxModelBytes);
  }
  selection.reason = `the WebGPU backend passed its self-test (log-probabilities within ${selection.selfTest.maxLogprobDiff.toFixed(4)})` +
    (adapter ? '' : '; the browser offers no WebGPU adapter, so wllama runs on its CPU build');
  return new BackendSwitch(wasm, gpu, selection, found, opts.maxModelBytes);
}

/** The self-test, or an EngineError as soon as the page's CSP blocks part of it, or when it takes too long. */
function bounded<T>(test: Promise<T>): Promise<T> {
  let stop = () => {};
  const failed = new Promise<never>((_, reject) => {
    const csp = watchCsp(undefined, (v) => reject(cspError('wllama\'s worker (WebGPU backend)', v)));
    const timer = setTimeout(() => reject(new EngineError(`it did not end within ${SELF_TEST_TIMEOUT_MS / 1000} s`, 'start_timeout')), SELF_TEST_TIMEOUT_MS);
    stop = () => {
      csp.stop();
      clearTimeout(timer);
    };
  });
  return Promise.race([test, failed]).finally(stop);
}

class BackendSwitch implements EngineCore {
  /** Whether wllama holds the loaded model. */
  private onGpu = false;
  /** Whether the last load went to the wasm engine ('auto' with a model too large for the adapter). */
  private wasmHoldsModel = false;

  constructor(private readonly wasm: EngineCore, private readonly gpu: WllamaCore | null,
    private readonly selection: BackendSelection, private readonly adapter: GpuAdapterLike | null,
    private readonly maxModelBytes: number) {}

  async load(request: LoadRequest, control: CallControl = {}): Promise<ModelInfo> {
    if (!this.gpu) return this.wasm.load(request, control);
    const blobs = await this.blobs(request, control);
    // The wasm engine's checks, but for the weight types: wllama has kernels of its own.
    await checkModelFile(blobFile(blobs), this.maxModelBytes, { signal: control.signal, tensorTypes: false });
    const tooBig = this.selection.requested === 'auto' ? await this.tooBig(blobs) : null;
    if (tooBig) {
      this.selection.reason = `${tooBig}: this model runs on wasm`;
      await this.gpu.unload();
      this.onGpu = false;
      this.wasmHoldsModel = true;
      return this.wasm.load({ ...request, source: blobs.length === 1 ? blobs[0]!.blob : request.source }, control);
    }
    await this.wasm.unload();
    this.onGpu = true;
    this.wasmHoldsModel = false;
    return this.gpu.loadBlobs(blobs, request, control);
  }

  /** The model's files as Blobs on this page: from the model store (downloaded there first), a File, or a download. */
  private async blobs({ source, options }: LoadRequest, control: CallControl): Promise<ModelBlobs> {
    if (typeof Blob !== 'undefined' && source instanceof Blob) return [{ name: source instanceof File ? source.name : 'model.gguf', blob: source }];
    if (options.store !== false && isRemoteSource(source)) {
      const { folder, files } = await this.wasm.modelsFetch({ source, options }, control);
      if ('getDirectory' in (globalThis.navigator?.storage ?? {})) return storedFiles(folder, files);
      // The worker's store is IndexedDB (no OPFS here), which this page reads as well.
      const file = await idbBackend()!.files(folder, files);
      return file.parts.map((p) => ({ name: p.name, blob: p.blob! }));
    }
    const file = await openSource(source as ModelSource, { signal: control.signal, onProgress: control.onProgress, store: null });
    return file.parts.map((p) => ({ name: p.name, blob: p.blob! }));
  }

  /** Why the model does not fit the adapter (a tensor larger than a storage buffer binding), or null. */
  private async tooBig(blobs: ModelBlobs): Promise<string | null> {
    const limit = this.adapter?.limits.maxStorageBufferBindingSize;
    if (!limit) return null;
    let largest = 0;
    for (const { blob } of blobs) {
      const header = await readGgufHeader(async (o, l) => new Uint8Array(await blob.slice(o, o + l).arrayBuffer()), blob.size, { skipArrays: true });
      for (const t of header.tensors) largest = Math.max(largest, tensorBytes(t.type, t.dims) ?? 0);
    }
    return largest > limit ? `its largest tensor (${formatBytes(largest)}) exceeds the adapter's storage buffer limit (${formatBytes(limit)})` : null;
  }

  complete(request: CompletionRequest, control?: CallControl): Promise<void> {
    return this.onGpu ? this.gpu!.complete(request, control) : this.wasm.complete(request, control);
  }

  embed(request: { inputs: string[] }, control?: CallControl) {
    return this.onGpu ? this.gpu!.embed() : this.wasm.embed(request, control);
  }

  rank(request: { query: string; documents: string[] }, control?: CallControl) {
    return this.onGpu ? this.gpu!.rank() : this.wasm.rank(request, control);
  }

  /** The backend that holds the model, or before a load the one loads go to. */
  async info(): Promise<EngineInfo> {
    const base = { ...(await this.wasm.info()), selection: { ...this.selection } };
    const gpuFirst = this.gpu && (this.onGpu || !this.wasmHoldsModel);
    return gpuFirst ? this.gpu!.info(base) : base;
  }

  async unload(): Promise<void> {
    this.onGpu = false;
    const [gpu, wasm] = await Promise.allSettled([this.gpu?.unload(), this.wasm.unload()]);
    for (const r of [gpu, wasm]) if (r.status === 'rejected') throw r.reason;
  }

  cacheStats = () => this.wasm.cacheStats();
  cacheClear = (options: { conversation_id?: string }) => this.wasm.cacheClear(options);
  cacheFlush = () => this.wasm.cacheFlush();
  modelsFetch = (request: LoadRequest, control?: CallControl) => this.wasm.modelsFetch(request, control);
  modelsList = () => this.wasm.modelsList();
  modelsDelete = (request: { id: StoredModelRef }) => this.wasm.modelsDelete(request);
  modelsUsage = () => this.wasm.modelsUsage();
}

