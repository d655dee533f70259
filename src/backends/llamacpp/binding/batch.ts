/** Tokens one llama_decode takes at most (n_batch = n_ubatch): the scheduler fills batches up to it, and an embedding
 * input must fit in one. */
export const N_BATCH = 512;

/**
 * The most tokens one decode step takes on a software GPU adapter (lavapipe, SwiftShader, WARP), so that one submit
 * keeps the adapter about a second: a 124-token prompt of a 0.5B model in one step took lavapipe over 30 s, during
 * which nothing else (a stop, another conversation's next token) could run. Decided from the model's size and a
 * throughput such an adapter reaches (lavapipe on 2 cores: ~4.5 GFLOP/s; SwiftShader less), not from a timing, so the
 * same prompt is always split the same way: the answer does not depend on how busy the machine was. A hardware
 * adapter takes N_BATCH (its speed is not known before it runs, and a guess low enough for a weak integrated GPU
 * would split a fast GPU's prompts for nothing).
 */
export function gpuStepTokens(fallbackAdapter: boolean, nParams: number): number {
  if (!fallbackAdapter) return N_BATCH;
  const flopsPerToken = 2 * nParams;
  return Math.max(16, Math.min(N_BATCH, Math.floor(SOFTWARE_GPU_FLOPS / flopsPerToken)));
}

/** FLOP/s a software adapter is counted on for gpuStepTokens: what one second of it computes. */
const SOFTWARE_GPU_FLOPS = 2e9;
