/** The most a wasm32 heap holds. */
export const WASM32_HEAP_BYTES = 4 * 1024 ** 3;
/** The most the memory64 build's heap holds (BuildVariant 'mt64'): Chromium's, Firefox's and Node's limit. */
export const MEMORY64_HEAP_BYTES = 16 * 1024 ** 3;

/** What the heap may hold of a model (the file on the CPU engine, its CPU share on the GPU engine): wasm32 has a 4 GiB
 * heap, shared with the KV cache. */
export const DEFAULT_MAX_MODEL_BYTES = 3.5 * 1024 ** 3;

/** The same for the memory64 build: 2 GiB of its heap left for the KV cache and compute buffers. */
export const MEMORY64_MAX_MODEL_BYTES = MEMORY64_HEAP_BYTES - 2 * 1024 ** 3;

/** CacheOptions.chunkBytes' default: pieces of a conversation's KV state small beside any heap, few per conversation. */
export const DEFAULT_CHUNK_BYTES = 64 * 2 ** 20;

/** Requests decoded together at most (LoadOptions.nParallel). */
export const MAX_PARALLEL = 16;

/** llama.cpp's threads at most (EngineOptions.threads): more than a browser's cores only spin. */
export const MAX_THREADS = 16;

/** The smallest context (LoadOptions.nCtx) a chat fits in. */
export const MIN_CTX = 16;
