/** Model files larger than this are refused before loading: wasm32 has a 4 GiB heap, shared with the KV cache. */
export const DEFAULT_MAX_MODEL_BYTES = 3.5 * 1024 ** 3;

/** Requests decoded together at most (LoadOptions.nParallel). */
export const MAX_PARALLEL = 16;

/** llama.cpp's threads at most (EngineOptions.threads): more than a browser's cores only spin. */
export const MAX_THREADS = 16;

/** The smallest context (LoadOptions.nCtx) a chat fits in. */
export const MIN_CTX = 16;
