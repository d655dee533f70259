// The KV cache's element types, attention kernel and size for a model.
import { InvalidRequestError, ModelLoadError } from '../../../errors.ts';
import type { GgmlType, LoadOptions } from '../../../types.ts';
import { formatBytes } from '../../../core/bytes.ts';
import { checkContextSize } from '../../../core/options.ts';
import { WASM32_HEAP_BYTES } from '../../../core/limits.ts';

/** f32 KV caches up to this size; beyond it f16 (half the memory, slower attention). */
const F32_KV_LIMIT = 512 * 1024 ** 2;
/** The longest context worth keeping f32 K/V for: models whose f32 cache cannot reach it within the limit get f16. */
const F32_MIN_CONTEXT = 8192;
/** Context sizes are multiples of this (the dynamic sizing plan's rounding). */
const CTX_STEP = 1024;
/** Reply tokens a request without max_tokens is sized for. */
export const DEFAULT_REPLY_BUDGET = 1024;
/** Room in the wasm heap for what is neither model nor KV cache: the compute buffer (~300 MiB with a
 * 150k vocabulary at n_batch 512, measured), decode I/O, state copies while the context grows. */
const HEAP_RESERVE = 768 * 1024 ** 2;
const DEFAULT_KV_BUDGET = 1024 ** 3;

interface Shape {
  nLayer: number;
  nEmbd: number;
  nHead: number;
  nHeadKv: number;
  nCtxTrain: number;
}

const ELEMENT_BYTES: Record<GgmlType, number> = { f32: 4, f16: 2, q8_0: 34 / 32, q4_0: 18 / 32 };

/** `t` as a KV cache type, when it is one (a prompt state file's header names its types as text). */
export const kvType = (t: string): GgmlType | undefined =>
  Object.hasOwn(ELEMENT_BYTES, t) ? (t as GgmlType) : undefined;

/** KV cache bytes one token takes in every layer (K and V). */
export function kvBytesPerToken(shape: Shape, typeK: GgmlType, typeV: GgmlType): number {
  const perType = shape.nLayer * (shape.nEmbd / Math.max(1, shape.nHead)) * shape.nHeadKv;
  return Math.ceil(perType * (ELEMENT_BYTES[typeK] + ELEMENT_BYTES[typeV]));
}

export interface KvLayout {
  typeK: GgmlType;
  typeV: GgmlType;
  flashAttn: 0 | 1;
  /** The context the engine starts with (dynamic) or keeps (explicit nCtx). */
  initialCtx: number;
  /** The largest context it will grow to: the training context, the memory budget, an explicit nCtx. */
  maxCtx: number;
  /** True when the context grows with demand; false when the caller fixed nCtx. */
  dynamic: boolean;
  kvBytesPerToken: number;
  /** Bytes the KV cache may take at most. */
  budgetBytes: number;
}

/**
 * Picks the KV layout and context limits for a model. Without nCtx the context is sized from demand: it starts at
 * CTX_STEP and grows to fit (prompt + reply budget, rounded up to CTX_STEP) up to maxCtx = min(training context,
 * budget / bytes per token). f32 K/V are used (fastest in wasm, see below) when they reach F32_MIN_CONTEXT tokens
 * within F32_KV_LIMIT, else f16; explicit cacheTypeK/V win.
 *
 * Why f32 and plain attention: on wasm, llama.cpp's flash-attention kernel is far slower than its plain attention
 * (matrix products), and f32 K/V avoid converting every cached value from f16 on each step. Measured on the
 * benchmark model (Qwen2.5-0.5B shapes, 1 thread), 48 prompt tokens after 1,200 / 2,300 cached ones: f16 + flash
 * attention 6.9 / 12.1 s, f16 plain 3.6 / 5.5 s, f32 plain 2.0 / 2.5 s; one decode step at 2,300: 281 ms vs 71 ms.
 * Quantized caches need flash attention (llama.cpp's rule).
 */
export function kvLayout(
  shape: Shape,
  modelBytes: number,
  options: LoadOptions,
  deviceBytes?: number,
  heapBytes = WASM32_HEAP_BYTES,
  draftBytesPerToken = 0,
): KvLayout {
  const train = shape.nCtxTrain > 0 ? shape.nCtxTrain : 4096;
  const heapRoom = heapBytes - modelBytes - HEAP_RESERVE; // what the model leaves of the wasm heap
  const budgetBytes = Math.max(
    0,
    Math.floor(
      options.kvBudgetBytes ?? Math.min(DEFAULT_KV_BUDGET, heapRoom, deviceBytes ? deviceBytes / 4 : Infinity),
    ),
  );
  const fits = (perToken: number, bytes: number) => Math.min(train, Math.floor(bytes / perToken / CTX_STEP) * CTX_STEP);
  // The context the budget holds with `perToken` bytes of the model's cells a token: a draft model's context follows
  // the model's size (run/session.ts), so its cells share the budget; f32 cells stop at F32_KV_LIMIT (speed's limit).
  const reach = (perToken: number, f32: boolean) =>
    Math.min(fits(perToken + draftBytesPerToken, budgetBytes), f32 ? fits(perToken, F32_KV_LIMIT) : Infinity);

  // An explicit nCtx is checked against the training context before anything is sized from it (its range was checked
  // where every backend's load options are: core/options.ts).
  checkContextSize(options.nCtx, shape.nCtxTrain);
  let typeK = options.cacheTypeK ?? options.cacheTypeV;
  if (!typeK) {
    if (options.nCtx !== undefined) {
      typeK = options.nCtx * kvBytesPerToken(shape, 'f32', 'f32') <= F32_KV_LIMIT ? 'f32' : 'f16';
    } else {
      typeK = reach(kvBytesPerToken(shape, 'f32', 'f32'), true) >= Math.min(train, F32_MIN_CONTEXT) ? 'f32' : 'f16';
    }
  }
  const typeV = options.cacheTypeV ?? typeK;
  const quantized = (t: string) => t !== 'f32' && t !== 'f16';
  const flashAttn = quantized(typeK) || quantized(typeV) ? 1 : 0;
  const perToken = kvBytesPerToken(shape, typeK, typeV);
  const perCell = perToken + draftBytesPerToken;
  const draftSaid = draftBytesPerToken ? `, the draft model's ${draftBytesPerToken} included` : '';

  if (options.nCtx !== undefined) {
    const nCtx = options.nCtx;
    const need = `nCtx: ${nCtx} tokens need ${formatBytes(nCtx * perCell)} of KV cache (${perCell} bytes a token${draftSaid})`;
    // Two options that contradict each other are the caller's to settle; a heap too small is this device's limit
    // (kv_too_large: a fallback server may take the model, api/router.ts).
    const budget = options.kvBudgetBytes;
    if (budget !== undefined && nCtx * perCell > budget) {
      throw new InvalidRequestError(
        `${need}, over kvBudgetBytes (${formatBytes(budget)}): raise kvBudgetBytes, lower nCtx to ` +
          `${Math.floor(budget / perCell)} or less, or use a quantized cache (cacheTypeK/V)`,
        'invalid_parameter',
        { param: 'nCtx', nCtx, kvBytesPerToken: perCell, budgetBytes: budget },
      );
    }
    if (nCtx * perCell > heapRoom) {
      throw new ModelLoadError(
        `${need}, but the ${formatBytes(heapBytes)} wasm heap has ${formatBytes(Math.max(0, heapRoom))} left beside this model: use nCtx ` +
          `${Math.max(0, Math.floor(heapRoom / perCell))} or less, a quantized cache (cacheTypeK/V), or a smaller model.`,
        'kv_too_large',
        { param: 'nCtx', nCtx, kvBytesPerToken: perCell, roomBytes: heapRoom },
      );
    }
    return {
      typeK,
      typeV,
      flashAttn,
      initialCtx: nCtx,
      maxCtx: nCtx,
      dynamic: false,
      kvBytesPerToken: perToken,
      budgetBytes: nCtx * perCell,
    };
  }
  const f32 = typeK === 'f32' && typeV === 'f32';
  const limit = f32 ? Math.min(budgetBytes, F32_KV_LIMIT) : budgetBytes;
  const maxCtx = reach(perToken, f32);
  if (maxCtx < Math.min(train, CTX_STEP)) {
    throw new ModelLoadError(
      `the KV cache budget (${formatBytes(budgetBytes)}) holds fewer than ${CTX_STEP} tokens of this ` +
        `model (${perCell} bytes each${draftSaid}): raise kvBudgetBytes, or pick a smaller model or quantization (the ` +
        'model and its KV cache share the 4 GiB wasm heap).',
      'kv_too_large',
      { budgetBytes, kvBytesPerToken: perCell },
    );
  }
  return {
    typeK,
    typeV,
    flashAttn,
    initialCtx: Math.min(CTX_STEP, maxCtx),
    maxCtx,
    dynamic: true,
    kvBytesPerToken: perToken,
    budgetBytes: limit,
  };
}

/** The context size for `tokens` cells: rounded up to CTX_STEP, at most maxCtx. */
export function contextFor(tokens: number, kv: KvLayout): number {
  return Math.min(kv.maxCtx, Math.ceil(Math.max(1, tokens) / CTX_STEP) * CTX_STEP);
}
