/** Model files larger than this are refused before loading: wasm32 has a 4 GiB heap, shared with the KV cache. */
export const DEFAULT_MAX_MODEL_BYTES = 3.5 * 1024 ** 3;
