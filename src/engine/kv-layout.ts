// The KV cache's element types and attention kernel for a context.
import type { LoadOptions } from '../types.ts';

/** f32 KV caches up to this size; beyond it f16 (half the memory, slower attention). */
const F32_KV_LIMIT = 512 * 1024 ** 2;

/**
 * KV cache types and attention kernel. On wasm, llama.cpp's flash-attention kernel is far slower than its plain
 * attention (matrix products), and f32 K/V avoid converting every cached value from f16 on each step. Measured on
 * the benchmark model (Qwen2.5-0.5B shapes, 1 thread), 48 prompt tokens after 1,200 / 2,300 cached ones:
 * f16 + flash attention 6.9 / 12.1 s, f16 plain 3.6 / 5.5 s, f32 plain 2.0 / 2.5 s; one decode step at 2,300:
 * 281 ms vs 71 ms. Quantized caches need flash attention (llama.cpp's rule).
 */
export function kvLayout(shape: { nLayer: number; nEmbd: number; nHead: number; nHeadKv: number }, nCtx: number, options: LoadOptions) {
  const f32Bytes = nCtx * shape.nLayer * 2 * (shape.nEmbd / Math.max(1, shape.nHead)) * shape.nHeadKv * 4;
  const fallback = f32Bytes <= F32_KV_LIMIT ? 'f32' : 'f16';
  const typeK = options.cacheTypeK ?? options.cacheTypeV ?? fallback;
  const typeV = options.cacheTypeV ?? typeK;
  const quantized = (t: string) => t !== 'f32' && t !== 'f16';
  return { typeK, typeV, flashAttn: quantized(typeK) || quantized(typeV) ? 1 : 0 } as const;
}
