// What creating an engine and loading a model take, and what a load gives: options, sources, progress, model info.

/** Which engine answers (EngineOptions.backend): see there. */
export type BackendName = 'auto' | 'wasm' | 'webgpu' | 'wllama';

/**
 * An OpenAI-compatible server (llama-server, vLLM, Ollama, SGLang, OpenAI itself) that answers in place of this
 * device: EngineOptions.backend `{ remote }` always, or EngineOptions.fallback `{ remote }` when a model cannot run
 * here. Requests go to `${baseURL}/chat/completions` and `${baseURL}/embeddings` from the page, so the server must
 * allow the page's origin (CORS) and the page's CSP its address (connect-src).
 */
export interface RemoteOptions {
  /** The API's base, e.g. 'http://127.0.0.1:8080/v1'. */
  baseURL: string;
  /** The model the server answers with (the request's `model`). */
  model: string;
  /** Sent as `Authorization: Bearer <apiKey>`. A key in a page is visible to every visitor: use a proxy's. */
  apiKey?: string;
  headers?: Record<string, string>;
}

/** The wasm builds: 'mt' = pthreads (needs cross-origin isolation), 'st' = single thread; '-relaxed' = with relaxed
 * SIMD's 8-bit dot product in the kernels (Chromium, Firefox), else plain SIMD128 (WebKit); 'webgpu' = single thread
 * with llama.cpp's WebGPU backend (needs JSPI); 'mt64' = pthreads with a memory64 heap (up to 16 GiB), for a model
 * past wasm32's 4 GiB on the CPU (Node today; built with `npm run build:wasm -- --memory64`). */
export type BuildVariant = CpuBuild | 'webgpu' | 'mt64';
/** The builds that run on the CPU only: the ones a page's engine worker serves today. */
export type CpuBuild = 'mt' | 'st' | 'mt-relaxed' | 'st-relaxed';

/** 'auto': the relaxed-SIMD build where the browser validates it, else the plain one. 'plain': always plain SIMD128. */
export type SimdChoice = 'auto' | 'plain';

export interface EngineOptions {
  /** 'wasm': Hearth's llama.cpp engine on the CPU (WebAssembly). 'webgpu': the same engine with llama.cpp's WebGPU
   * backend beneath it (the 'webgpu' build: every feature, KV state kept as on the CPU), when the browser has a
   * WebGPU adapter (with shader-f16, or without it computing in f32) and JSPI and the engine passes its self-test on
   * it (the probe model on the GPU against the CPU); else the CPU engine. 'auto' (default): the same choice.
   * 'wllama': @wllama/wllama's WebGPU build (no KV persistence or batching; see docs/webgpu.md), after a self-test
   * against the CPU engine. engine.info().selection says which ran and why. */
  backend?: BackendName | { remote: RemoteOptions };
  /** Where answers come from when a model cannot run on this device: its load failed with ModelLoadError
   * 'too_large', 'kv_too_large', 'context_failed' (memory) or 'quota_exceeded'. Nothing goes to the server
   * otherwise; engine.info().backend is then 'remote' and .selection.reason says why. Default: none. */
  fallback?: { remote: RemoteOptions } | null;
  /** CPU threads for llama.cpp. Default: half of navigator.hardwareConcurrency (at most 8); 1 without cross-origin
   * isolation. */
  threads?: number;
  /** Which SIMD the wasm build uses; engine.info().build and .buildReason say which runs and why. Default 'auto'. */
  simd?: SimdChoice;
  /** The GPU engine: false computes in f32 even where the adapter has shader-f16 (f16 weights and KV cache stay
   * 16-bit, packed two to a 32-bit word), the path adapters without it take — to compare the two on one GPU. Default:
   * f16 where the adapter has it. engine.info().gpu.shaderPath says which runs. */
  gpuShaderF16?: boolean;
  /** The GPU engine: false runs matrix products on the register-tiled shaders even where the adapter offers its matrix
   * units (`chromium-experimental-subgroup-matrix`: Chrome with unsafe WebGPU APIs allowed) — to compare the two.
   * Default: the matrix units where the adapter has them, with shader-f16. engine.info().gpu.subgroupMatrix says which
   * runs. */
  gpuSubgroupMatrix?: boolean;
  /** The most bytes of a model the wasm heap may hold: on the CPU engine the whole file; on the GPU engine what stays
   * on the CPU (the token embeddings, and a tensor larger than the adapter binds), read from the GGUF header — the
   * layers go to the GPU, so the file itself may be larger. Default: 3.5 GiB (wasm32 has a 4 GiB heap). */
  maxModelBytes?: number;
  /** Where the engine's static files (engine.worker.js, hearth-*.js/.wasm) are served. Default: '/hearth/'. */
  assetsUrl?: string;
  /** Where { hf } sources are fetched from (a mirror). Default: 'https://huggingface.co'. */
  hfEndpoint?: string;
  cache?: CacheOptions;
  /** One engine for all tabs of this origin that pass the same name (true: 'default'): one tab, elected with Web
   * Locks, runs it and serves the others over a BroadcastChannel, so the model is in memory once. The running tab's
   * options apply. When it closes, another tab takes over and loads the models in use again (from the model store);
   * requests it was running then fail with EngineError 'leader_gone' (details.retryable) and may be sent again
   * (requests it had not yet taken go to the next one). Each tab
   * is answered by the model it loaded; a tab that loaded none uses the loaded one. Default false. */
  shared?: boolean | string;
}

export interface CacheOptions {
  /** Keep KV state in IndexedDB so it survives a reload. Default true. */
  persistent?: boolean;
  /** Cache the state of the rendered system prompt (and tools). Default true. */
  systemPrompt?: boolean;
  /** Keep each conversation's state and extend it turn by turn. Default true. */
  conversations?: boolean;
  /** Prefixes shorter than this (in tokens) are not cached or matched by tokens. Default 100. */
  minTokens?: number;
  /** Bytes of IndexedDB the cache may use; least recently used records go first. Default 20% of the storage quota. */
  budgetBytes?: number;
  /** A conversation's KV state is saved and restored in pieces of about this many bytes, so that a long conversation
   * of a big model never passes through the heap whole (an 8B model's cache takes 128–256 KiB a token). Default 64 MiB. */
  chunkBytes?: number;
}

/**
 * A GGUF file: a URL, a Blob/File, a Hugging Face repo file, or (Node only) a path on disk. A split model
 * (name-00001-of-0000N.gguf) is named by its first part, the others found beside it; as local files, it is every part
 * (Files with those names, in any order).
 */
export type ModelSource = string | Blob | File[] | { hf: HfFile } | { path: string };

/** A file of a Hugging Face model repo. */
export interface HfFile {
  repo: string;
  file: string;
  /** A branch, tag or commit. Default 'main'. */
  revision?: string;
  /** Where this repo is fetched from (a mirror of the Hub); EngineOptions.hfEndpoint when not given. */
  endpoint?: string;
}

/** 'download' and 'verify' (sha256) happen only when a URL or { hf } model is not in the model store yet. */
export type ProgressPhase = 'download' | 'verify' | 'load' | 'restore' | 'prefill';

export interface Progress {
  phase: ProgressPhase;
  /** Bytes for 'download', 'verify', 'load' and 'restore'; tokens for 'prefill'. */
  loaded: number;
  total: number;
  /** 'download' only: bytes per second over the last few seconds. */
  bytesPerSecond?: number;
  /** Set on the download and reading of a prompt state file (LoadOptions.promptState); absent for the model's. */
  file?: 'prompt-state';
}

export type GgmlType = 'f32' | 'f16' | 'q8_0' | 'q4_0';

export interface LoadOptions {
  onProgress?: (p: Progress) => void;
  signal?: AbortSignal;
  /** A fixed KV cache size in tokens (at most the model's training context). Default: sized from demand — each
   * request's prompt + max_tokens (1024 without it), rounded up to 1024 — and grown as needed up to
   * min(training context, kvBudgetBytes / KV bytes per token); see engine.info().context. */
  nCtx?: number;
  /** Requests decoded together (continuous batching); more wait in FIFO order. Default 4, at most 16. */
  nParallel?: number;
  /** Bytes the KV cache may grow to. Default: 1 GiB, less when the model leaves less of the 4 GiB wasm heap. */
  kvBudgetBytes?: number;
  /** KV cache element types. Default f32 (fastest in wasm) when it holds 8192 tokens (or the whole training
   * context) in 512 MiB, else f16. Quantized types (q8_0, q4_0) save memory but need llama.cpp's flash-attention
   * kernel, which is slow in wasm. */
  cacheTypeK?: GgmlType;
  cacheTypeV?: GgmlType;
  /** Load models whose weight types have no WebAssembly SIMD kernel (IQ1–IQ3, TQ, MXFP4, BF16…), which run
   * several times slower; without it they fail with ModelLoadError 'unsupported_quantization'. */
  allowScalarKernels?: boolean;
  /** A { hf } model is kept only once checked against the sha256 the Hub's API gives; when the API cannot say
   * (unreachable, rate-limited, a mirror without it), the load fails with ModelLoadError 'checksum_unavailable'
   * (details.retryable). true: keep it checked by size and GGUF header only (models.list() shows verified: false). */
  allowUnverified?: boolean;
  /** Keep a URL or { hf } model in the model store (OPFS; a folder in Node): downloaded once, resumed after an
   * interruption, loaded from the store afterwards without the network. Default true; false downloads into memory. */
  store?: boolean;
  /** Sliding-window attention models (Gemma 3…): true (default) keeps every token in the sliding-window layers, so
   * any earlier point of a conversation can be reused; false keeps only the window there (less memory on long
   * contexts), reusing a conversation only where a checkpoint was taken (see the SWA figures in docs/kv-cache.md). */
  swaFull?: boolean;
  /** In the WebGPU build: how many of the model's layers run on the GPU (llama.cpp's n_gpu_layers, `-ngl`); the
   * rest, and what the GPU backend cannot run, stay on the CPU. Default: all of them. Ignored by CPU builds. */
  gpuLayers?: number;
  /**
   * A prompt state file for this model (engine.cache.exportPrompt, `npx hearth prompt-state`): the computed state of
   * the prompt every conversation starts with. A URL goes to the model store like the model (downloaded once, with
   * 'download' progress, resumed, offline afterwards); a Blob or File is read as it is. A prompt that starts with its
   * tokens begins after them. Without cacheTypeK/V the KV cache takes the file's types. A file that does not fit the
   * model, this llama.cpp build or the KV layout, or is damaged, is not used: the model loads, prompts prefill as
   * without it, and ModelInfo.warnings says why.
   */
  promptState?: string | Blob;
  /**
   * The model's projector (an mmproj GGUF: its image and audio encoder), so that messages can hold image_url and
   * input_audio parts. A URL or { hf } source goes to the model store like the model; a Blob or File is read as it
   * is. `true` with a { hf } model, or { hf: { repo } } without a file, takes the repo's mmproj*.gguf (f16 first).
   * Its size counts with the model's against maxModelBytes and the KV budget.
   */
  projector?: ModelSource | { hf: Omit<HfFile, 'file'> & { file?: string } } | true;
  /** Speculative decoding for every request that does not say otherwise (ChatCompletionCreateParams.speculative).
   * Not for memory that cannot drop the guesses it rejects (recurrent, hybrid, a window-sized sliding window). Default:
   * { kind: 'draft' } when a draft model is loaded, else none; { kind: 'draft' } without `draft` is refused. */
  speculative?: SpeculativeOptions;
  /**
   * A draft model for speculative decoding ({ kind: 'draft' }): a smaller model of the same vocabulary (Qwen2.5-0.5B
   * beside Qwen2.5-7B, Llama-3.2-1B beside Llama-3.1-8B) whose guesses the model checks several at a time. A URL or
   * { hf } source goes to the model store like the model; a Blob or File is read as it is. Its size counts with the
   * model's against maxModelBytes (on the GPU engine its layers go to the GPU too), its KV cache (f16, the context's
   * size) with the model's against kvBudgetBytes. A model of another vocabulary,
   * or one whose memory cannot drop guesses (recurrent, hybrid), is refused with ModelLoadError 'invalid_draft'.
   */
  draft?: ModelSource;
}

export type MediaInputKind = 'text' | 'image' | 'audio';

/**
 * What the model keeps per sequence. 'recurrent' (Mamba, RWKV) and 'hybrid' (recurrent and attention layers: Qwen3.5,
 * LFM2, Granite 4) hold a state that cannot be rolled back to an earlier token, so the cache reuses them only up to a
 * checkpoint; 'swa' (Gemma 3) attends to the last `swaWindow` tokens in some layers.
 */
export interface ModelMemory {
  kind: 'attention' | 'swa' | 'recurrent' | 'hybrid';
  /** Tokens a sliding-window layer attends to; 0 without such layers. */
  swaWindow: number;
}

export interface ModelInfo {
  name: string;
  description: string;
  architecture: string;
  sizeBytes: number;
  nParams: number;
  nCtxTrain: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  nVocab: number;
  bosToken: number;
  eosToken: number;
  eogTokens: number[];
  chatTemplate: string | null;
  memory: ModelMemory;
  /** Every GGUF key-value llama.cpp read (arrays are summarised by llama.cpp). */
  metadata: Record<string, string>;
  /** The shipped prompt state in use (LoadOptions.promptState): its tokens and bytes; null without one. */
  promptState?: { tokens: number; bytes: number } | null;
  /** What the model reads: text, and images and audio as its projector allows (LoadOptions.projector). */
  input?: MediaInputKind[];
  /** The draft model loaded beside it for speculative decoding (LoadOptions.draft); absent without one. */
  draft?: { name: string; sizeBytes: number; nParams: number; nLayer: number; nEmbd: number };
  /** What the load could not do as asked, e.g. a prompt state file that does not fit this model. */
  warnings?: string[];
}

/**
 * Speculative decoding: tokens guessed ahead are checked in one batch with the next one, and those the model would
 * have chosen itself are kept: the same reply (each token sampled from the model's own distribution, in order), in
 * fewer reads of the weights. Worth it where replies repeat their input (code edits, quoting, rewriting, structured
 * output); a guess that fails costs a little more compute that step.
 */
export interface SpeculativeOptions {
  /** 'ngram': guesses from the conversation itself, what followed the last earlier occurrence of its last few
   * tokens (no second model). 'draft': the draft model's own greedy reply (LoadOptions.draft), which has read the
   * whole conversation too. */
  kind: 'ngram' | 'draft';
  /** Tokens guessed at most a step, 1–16 (default 4). */
  n_draft?: number;
  /** 'draft' only: the draft stops guessing at a token it gives less than this probability among its 10 likeliest
   * (llama.cpp's draft sampler), 0–1 (default 0, as llama.cpp's --draft-p-min: n_draft guesses every step). A guess it
   * doubts is likely refused, and costs a draft decode and a checked token: worth raising where checking is not
   * nearly free (a CPU). */
  p_min?: number;
}
