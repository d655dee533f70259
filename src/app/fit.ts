// Does a model fit this device, before any byte of it is downloaded? What the engine that will run it needs against
// what the browser gives. The CPU engine holds the weights, the KV cache at the context the app loads it with and
// llama.cpp's working buffers in WebAssembly's 4 GiB heap (the engine's model size limit within it). The GPU engine
// holds only the token embeddings there (and any matrix larger than the GPU binds to a shader, as large again), the
// rest — weights and KV cache — in GPU memory, whose size WebGPU does not say: the tab's share is checked, the GPU's
// is shown. Then navigator.deviceMemory where the browser says it, and the storage the download still needs against
// the site's quota. Then how fast it will answer, from a measured probe of this device (device.ts): tokens a second
// estimated from how many bytes a second the probe read, as decoding a token reads every weight once. A size the Hub
// has not given is estimated from the parameter count and the quantization.
import { formatBytes } from '../core/bytes.ts';
import { DEFAULT_MAX_MODEL_BYTES } from '../core/limits.ts';

/** The context the app loads a model with (tokens; less where the model was trained for less). */
export const APP_CONTEXT = 4096;
/** WebAssembly's heap (wasm32): weights, KV cache and working buffers together. */
export const WASM_HEAP_BYTES = 4 * 1024 ** 3;
/** llama.cpp's compute buffers and the engine's own memory besides the weights and the KV cache. */
const WORKING_BYTES = 320 * 1024 ** 2;
/** The share of navigator.deviceMemory one tab can take: the browser, the system and other apps hold the rest. */
const DEVICE_SHARE = 0.5;

export interface ModelNeeds {
  /** Bytes of the model's files (and its projector's); null while the Hub has not said (or could not be asked). */
  bytes: number | null;
  /** Parameters (the catalogue's "7B"): the size estimated while `bytes` is unknown; null when unknown too. */
  params?: number | null;
  /** Bytes of them already in the model store (a paused download, or a complete one). */
  stored: number;
  layers: number;
  kvHeads: number;
  headDim: number;
  /** The longest context the model was trained for. */
  context: number;
  /** The token embedding's rows and width, and the file's quantization ("Q4_K_M"): the largest matrix's bytes. */
  vocab: number;
  embd: number;
  quant: string;
}

export interface DeviceFacts {
  /** navigator.deviceMemory (GiB, rounded down by the browser) where it exists. */
  deviceMemoryGiB: number | null;
  /** Storage the site may still use (quota − usage), null when the browser does not say. */
  freeStorage: number | null;
  /** Which engine will run the model: the GPU engine ('webgpu') or the CPU engine ('wasm'). */
  backend: 'webgpu' | 'wasm';
  /** Bytes a second the probe read on that backend, times the share of it decoding reaches; null before a probe. */
  decodeBytesPerSecond: number | null;
  /** The GPU adapter's maxStorageBufferBindingSize (the GPU engine only), else null. */
  gpuBindingLimit: number | null;
  /** Seconds a token costs whatever the model's size (the GPU engine's dispatches); 0 on the CPU. */
  tokenOverheadSeconds: number;
  /** The model file size the engine takes at most. */
  maxModelBytes?: number;
}

export type SpeedClass = 'fast' | 'good' | 'slow' | 'very slow';

export interface Fit {
  /** false: the app does not start it, and `reason` says why. */
  fits: boolean;
  reason: string;
  /** Bytes of the tab's memory the model needs at `context` (the heap's share on the GPU engine); null while its size
   * is unknown. */
  memory: number | null;
  /** The GPU engine: bytes of GPU memory it needs (the weights past the heap, the KV cache); null on the CPU engine. */
  gpuMemory: number | null;
  /** The size was estimated from the parameter count (the Hub did not give it). */
  estimated: boolean;
  context: number;
  backend: 'webgpu' | 'wasm';
  /** Estimated decode speed, tokens a second; null without a size or a probe. */
  tokensPerSecond: number | null;
  speed: SpeedClass | null;
  /** What else a visitor should know ('' when nothing): a part that runs on the CPU instead of the GPU. */
  note: string;
}

/** The KV cache's bytes at `context` tokens: K and V, f16 (the CPU engine's; the GPU engine keeps f32, `bytes` 4), in
 * every layer. */
export const kvBytes = (m: Pick<ModelNeeds, 'layers' | 'kvHeads' | 'headDim'>, context: number, bytes = 2) =>
  2 * m.layers * m.kvHeads * m.headDim * context * bytes;

/** "7B", "1.7B", "360M": a parameter count; null when it is none. */
export function parseParams(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*([MB])$/i.exec(text.trim());
  return m ? Number(m[1]) * (m[2]!.toUpperCase() === 'B' ? 1e9 : 1e6) : null;
}

/** Bits a weight takes in a file of this quantization (its mix's average, roughly). */
export function quantBits(quant: string): number {
  const q = quant.toUpperCase();
  if (q === 'F32') return 32;
  if (q === 'F16' || q === 'BF16') return 16;
  const bits = /^I?Q(\d)/.exec(q);
  return bits ? Number(bits[1]) + 0.5 : 16;
}

export function speedClass(tokensPerSecond: number): SpeedClass {
  if (tokensPerSecond >= 20) return 'fast';
  if (tokensPerSecond >= 8) return 'good';
  if (tokensPerSecond >= 3) return 'slow';
  return 'very slow';
}

export function modelFit(model: ModelNeeds, device: DeviceFacts): Fit {
  const context = Math.min(APP_CONTEXT, model.context);
  const estimated = model.bytes === null && model.params != null;
  const bytes = model.bytes ?? (estimated ? (model.params! * quantBits(model.quant)) / 8 : null);
  const base = {
    context,
    backend: device.backend,
    memory: null,
    gpuMemory: null,
    estimated,
    tokensPerSecond: null,
    speed: null,
    note: '',
  };
  if (bytes === null) return { ...base, fits: true, reason: 'its size is not known yet' };
  const maxModel = device.maxModelBytes ?? DEFAULT_MAX_MODEL_BYTES;
  const about = estimated ? 'about ' : '';
  // What the heap holds: everything on the CPU engine; on the GPU engine the token embeddings, and an output matrix
  // (as large) where the GPU cannot bind it — then it runs on the CPU, which the card says.
  const embedding = (model.vocab * model.embd * quantBits(model.quant)) / 8;
  const gpu = device.backend === 'webgpu';
  const unbindable = gpu && device.gpuBindingLimit !== null && embedding > device.gpuBindingLimit;
  const inHeap = gpu ? embedding * (unbindable ? 2 : 1) : bytes;
  const memory = inHeap + (gpu ? 0 : kvBytes(model, context)) + WORKING_BYTES;
  const gpuMemory = gpu ? Math.max(0, bytes - inHeap) + kvBytes(model, context, 4) : null;
  const refuse = (reason: string): Fit => ({ ...base, memory, gpuMemory, fits: false, reason });
  if (inHeap > maxModel) {
    return refuse(
      gpu
        ? `on the GPU engine ${formatBytes(inHeap)} of its weights stay in the tab's memory (the token embeddings` +
            `${unbindable ? ', and a matrix larger than this GPU binds' : ''}), more than the engine holds there (${formatBytes(maxModel)})`
        : `its ${about}${formatBytes(bytes)} of weights are more than the CPU engine holds (${formatBytes(maxModel)}; ` +
            'WebAssembly has a 4 GB heap): it needs a GPU',
    );
  }
  if (memory > WASM_HEAP_BYTES) {
    return refuse(
      `it needs ${about}${formatBytes(memory)} of memory at ${context} tokens of context; WebAssembly gives ${formatBytes(WASM_HEAP_BYTES)} at most`,
    );
  }
  if (device.deviceMemoryGiB !== null && memory > device.deviceMemoryGiB * 1024 ** 3 * DEVICE_SHARE) {
    return refuse(
      `it needs ${about}${formatBytes(memory)} of memory; this device has about ${device.deviceMemoryGiB} GB, of which a tab can use about half`,
    );
  }
  const toDownload = Math.max(0, bytes - model.stored);
  if (device.freeStorage !== null && toDownload > device.freeStorage) {
    return refuse(
      `the download needs ${about}${formatBytes(toDownload)} of storage; this site may use ${formatBytes(device.freeStorage)} more`,
    );
  }
  const tokensPerSecond =
    device.decodeBytesPerSecond === null
      ? null
      : 1 / (bytes / device.decodeBytesPerSecond + device.tokenOverheadSeconds);
  const note = unbindable
    ? `its largest matrix (about ${formatBytes(embedding)}) is over this GPU's ${formatBytes(device.gpuBindingLimit!)} buffer limit: that part runs on the CPU`
    : '';
  return {
    ...base,
    note,
    memory,
    gpuMemory,
    fits: true,
    reason: gpu
      ? `needs ${about}${formatBytes(memory)} of the tab's memory and ${formatBytes(gpuMemory!)} of the GPU's at ${context} tokens of context`
      : `needs ${about}${formatBytes(memory)} of memory at ${context} tokens of context`,
    tokensPerSecond,
    speed: tokensPerSecond === null ? null : speedClass(tokensPerSecond),
  };
}

/** The largest first download the app suggests: minutes on a home connection, not an hour. */
export const RECOMMEND_MAX_BYTES = 2 * 1024 ** 3;

/**
 * The model to suggest: the largest that fits, answers at a good speed or better and downloads in minutes (under
 * RECOMMEND_MAX_BYTES); else the smallest that fits.
 */
export function recommend<T extends { fit: Fit; bytes: number | null }>(models: T[]): T | null {
  const fitting = models.filter((m) => m.fit.fits && m.bytes !== null);
  const quick = fitting.filter(
    (m) => (m.fit.speed === 'fast' || m.fit.speed === 'good') && m.bytes! <= RECOMMEND_MAX_BYTES,
  );
  const bySize = (a: T, b: T) => a.bytes! - b.bytes!;
  return quick.sort(bySize).at(-1) ?? fitting.sort(bySize)[0] ?? null;
}
