// Does a model fit this device, before any byte of it is downloaded? The memory it needs (its weights, the KV cache at
// the context the app loads it with, and llama.cpp's working buffers) against what the browser gives: WebAssembly's
// 4 GiB heap (the engine's model size limit within it), navigator.deviceMemory where the browser says it, and the
// storage the download still needs against the site's quota. Then how fast it will answer, from a measured probe of
// this device (device.ts): tokens a second estimated from how many bytes a second the probe read, as decoding a token
// reads every weight once. On the GPU engine, WebGPU says no memory size, only the largest buffer a shader may bind:
// a matrix larger than that (the token embedding, the largest) is computed on the CPU, which the card says.
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
  /** Bytes of the model's files (and its projector's); null while the Hub has not said. */
  bytes: number | null;
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
  /** Bytes of memory the model needs at `context`; null while its size is unknown. */
  memory: number | null;
  context: number;
  backend: 'webgpu' | 'wasm';
  /** Estimated decode speed, tokens a second; null without a size or a probe. */
  tokensPerSecond: number | null;
  speed: SpeedClass | null;
  /** What else a visitor should know ('' when nothing): a part that runs on the CPU instead of the GPU. */
  note: string;
}

/** The KV cache's bytes at `context` tokens: K and V, f16, in every layer. */
export const kvBytes = (m: Pick<ModelNeeds, 'layers' | 'kvHeads' | 'headDim'>, context: number) =>
  2 * m.layers * m.kvHeads * m.headDim * context * 2;

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
  const base = { context, backend: device.backend, memory: null, tokensPerSecond: null, speed: null, note: '' };
  if (model.bytes === null) return { ...base, fits: true, reason: 'its size is not known yet' };
  const memory = model.bytes + kvBytes(model, context) + WORKING_BYTES;
  const maxModel = device.maxModelBytes ?? DEFAULT_MAX_MODEL_BYTES;
  const refuse = (reason: string): Fit => ({ ...base, memory, fits: false, reason });
  if (model.bytes > maxModel) {
    return refuse(
      `its ${formatBytes(model.bytes)} of weights are more than a browser tab's engine holds (${formatBytes(maxModel)})`,
    );
  }
  if (memory > WASM_HEAP_BYTES) {
    return refuse(
      `it needs ${formatBytes(memory)} of memory at ${context} tokens of context; WebAssembly gives ${formatBytes(WASM_HEAP_BYTES)} at most`,
    );
  }
  if (device.deviceMemoryGiB !== null && memory > device.deviceMemoryGiB * 1024 ** 3 * DEVICE_SHARE) {
    return refuse(
      `it needs ${formatBytes(memory)} of memory; this device has about ${device.deviceMemoryGiB} GB, of which a tab can use about half`,
    );
  }
  const toDownload = Math.max(0, model.bytes - model.stored);
  if (device.freeStorage !== null && toDownload > device.freeStorage) {
    return refuse(
      `the download needs ${formatBytes(toDownload)} of storage; this site may use ${formatBytes(device.freeStorage)} more`,
    );
  }
  const tokensPerSecond =
    device.decodeBytesPerSecond === null
      ? null
      : 1 / (model.bytes / device.decodeBytesPerSecond + device.tokenOverheadSeconds);
  const embedding = (model.vocab * model.embd * quantBits(model.quant)) / 8;
  const note =
    device.backend === 'webgpu' && device.gpuBindingLimit !== null && embedding > device.gpuBindingLimit
      ? `its largest matrix (about ${formatBytes(embedding)}) is over this GPU's ${formatBytes(device.gpuBindingLimit)} buffer limit: that part runs on the CPU`
      : '';
  return {
    ...base,
    note,
    memory,
    fits: true,
    reason: `needs ${formatBytes(memory)} of memory at ${context} tokens of context`,
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
