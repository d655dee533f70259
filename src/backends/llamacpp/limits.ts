/** Model files larger than this are refused before loading: wasm32 has a 4 GiB heap, shared with the KV cache. */
export const DEFAULT_MAX_MODEL_BYTES = 3.5 * 1024 ** 3;

/** Tokens one llama_decode takes at most (n_batch = n_ubatch): the scheduler fills batches up to it, and an embedding
 * input must fit in one. */
export const N_BATCH = 512;
