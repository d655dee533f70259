// Public types: the engine interface (implemented once in the worker by Engine and once on the page by the client)
// and the OpenAI-shaped request and response objects.

export type Backend = 'auto' | 'wasm' | 'webgpu';

/** The wasm builds: 'mt' = pthreads (needs cross-origin isolation), 'st' = single thread. */
export type BuildVariant = 'mt' | 'st';

export interface EngineOptions {
  /** 'wasm': Hearth's llama.cpp in WebAssembly (all features). 'webgpu': @wllama/wllama with WebGPU (no KV
   * persistence or batching; see the README), after a self-test against the wasm engine, falling back to wasm when
   * it fails. 'auto' (default): 'webgpu' when an adapter with shader-f16 exists, the self-test passes and the model
   * fits the adapter's buffers, else 'wasm'. engine.info().selection says which and why. */
  backend?: Backend;
  /** CPU threads for llama.cpp. Default: half of navigator.hardwareConcurrency (at most 8); 1 without cross-origin isolation. */
  threads?: number;
  /** Largest model file the engine will try to load, in bytes. Default: 3.5 GiB (wasm32 has a 4 GiB heap). */
  maxModelBytes?: number;
  /** Where the engine's static files (engine.worker.js, hearth-*.js/.wasm) are served. Default: '/hearth/'. */
  assetsUrl?: string;
  /** Where { hf } sources are fetched from (a mirror). Default: 'https://huggingface.co'. */
  hfEndpoint?: string;
  cache?: CacheOptions;
  /** One engine for all tabs of this origin that pass the same name (true: 'default'): one tab, elected with Web
   * Locks, runs it and serves the others over a BroadcastChannel, so the model is in memory once. The running tab's
   * options apply. When it closes, another tab takes over and loads the models in use again (from the model store);
   * requests in flight then fail with EngineError 'leader_gone' (details.retryable) and may be sent again. Each tab
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
}

export interface CacheStats {
  /** Whether saved state goes to IndexedDB. */
  persistent: boolean;
  /** Records in IndexedDB (conversations and system prompts), and their bytes. */
  entries: number;
  bytes: number;
  budgetBytes: number;
  conversations: number;
  systemPrompts: number;
  /** What the KV cache in memory holds now. */
  memory: { slots: number; tokens: number; systemPrompts: number };
  /** Requests by where their cached prefix came from. */
  hits: Record<CacheSource, number>;
  /** Saves to IndexedDB so far: how many, bytes written, and milliseconds spent (export from llama.cpp + write). */
  saves: { count: number; bytes: number; ms: number };
}

export interface EngineCache {
  stats(): Promise<CacheStats>;
  /** Forgets one conversation's state (memory and IndexedDB), or all cached state. */
  clear(options?: { conversation_id?: string }): Promise<void>;
  /** Resolves when every save started so far is in IndexedDB (e.g. before navigating away). */
  flush(): Promise<void>;
}

/**
 * A GGUF file: a URL, a Blob/File, a Hugging Face repo file, or (Node only) a path on disk. A split model
 * (name-00001-of-0000N.gguf) is named by its first part; the others are found beside it.
 */
export type ModelSource = string | Blob | { hf: { repo: string; file: string; revision?: string } } | { path: string };

/** 'download' and 'verify' (sha256) happen only when a URL or { hf } model is not in the model store yet. */
export type ProgressPhase = 'download' | 'verify' | 'load' | 'restore' | 'prefill';

export interface Progress {
  phase: ProgressPhase;
  /** Bytes for 'download', 'verify', 'load' and 'restore'; tokens for 'prefill'. */
  loaded: number;
  total: number;
  /** 'download' only: bytes per second over the last few seconds. */
  bytesPerSecond?: number;
}

/** A model in the model store (OPFS in a browser, a folder in Node). */
export interface StoredModel {
  /** The URL of its (first) file: what models.delete() takes. A { hf } source is stored under its resolve URL. */
  id: string;
  /** The (first) file's name. */
  name: string;
  files: Array<{ name: string; size: number; sha256: string | null }>;
  /** Bytes of all its files; null while a download of unknown length is under way. */
  size: number | null;
  /** Bytes downloaded so far (size when complete). */
  downloaded: number;
  /** Downloaded in full and checked (size, and sha256 where the source gave one): it loads without the network. */
  complete: boolean;
  /** Its sha256 was checked against the one the source gave. */
  verified: boolean;
  /** When it was last loaded (or downloaded), ms since the epoch. */
  lastUsed: number;
}

export interface ModelStoreUsage {
  /** Bytes the stored models take. */
  models: number;
  /** Bytes this origin (or the disk, in Node) uses and may use in all; null when the platform does not say. */
  used: number | null;
  quota: number | null;
  /** Whether the browser keeps this origin's storage under pressure (navigator.storage.persist(), requested on the
   * first load of a URL or { hf } model); null when the platform does not say. */
  persisted: boolean | null;
}

/** A stored model: its id (StoredModel.id, the URL) or the { hf } source it was loaded from. */
export type StoredModelRef = string | { hf: { repo: string; file: string; revision?: string } };

/** Where the model store keeps files: OPFS, IndexedDB (browsers without OPFS sync access), a folder (Node). */
export type ModelStorage = 'opfs' | 'indexeddb' | 'folder';

export interface ModelStoreApi {
  list(): Promise<StoredModel[]>;
  /** Deletes a stored model (complete or not); false when there was none. */
  delete(model: StoredModelRef): Promise<boolean>;
  usage(): Promise<ModelStoreUsage>;
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
   * contexts), reusing a conversation only where a checkpoint was taken (see the README's SWA figures). */
  swaFull?: boolean;
}

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface ContentPart {
  type: 'text';
  text: string;
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: Role;
  content: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** An earlier assistant turn's reasoning, for templates that render it (Kimi, MiniMax, Nemotron, Cohere2, …). */
  reasoning_content?: string | null;
}

export interface Tool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** 'auto': the model may call tools; 'none': it answers in text; 'required': it calls at least one; a named
 * function: it calls that one. 'required' and named choices are enforced with a grammar. */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** 'json_object': any JSON object; 'json_schema': JSON valid against the schema. Both are enforced with a grammar. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

/** A tool call as it streams: the first delta of a call has its id, type and name; later ones add to its arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface TopLogprob {
  token: string;
  logprob: number;
  /** The token's UTF-8 bytes (a token may hold part of a character). */
  bytes: number[] | null;
}

export interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

export interface ChoiceLogprobs {
  content: TokenLogprob[] | null;
}

export interface ChatCompletionCreateParams {
  messages: ChatMessage[];
  model?: string;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  repeat_penalty?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  /** Tokens the penalties look back over. Default 64. */
  repeat_last_n?: number | null;
  stop?: string | string[] | null;
  seed?: number | null;
  stream?: boolean | null;
  tools?: Tool[];
  /** Default 'auto' with tools, 'none' without. */
  tool_choice?: ToolChoice | null;
  /** false: at most one tool call per reply (default true). */
  parallel_tool_calls?: boolean | null;
  response_format?: ResponseFormat | null;
  /** A GBNF grammar (llama.cpp's syntax, start rule `root`) the reply must follow; not with response_format. */
  grammar?: string | null;
  /** Return each generated token's log-probability (from the logits before sampling). */
  logprobs?: boolean | null;
  /** With logprobs: the 0–20 likeliest tokens at each step too. */
  top_logprobs?: number | null;
  /** Extra variables for the chat template, as llama.cpp's server takes them: e.g. {enable_thinking: false} turns
   * reasoning off on templates that have the switch (Qwen3, SmolLM3, …). */
  chat_template_kwargs?: Record<string, unknown> | null;
  /** gpt-oss's reasoning level, passed to its template. */
  reasoning_effort?: 'low' | 'medium' | 'high' | null;
  /** Names the conversation: its KV state is kept (and saved) under this id. Without it, conversations are matched by content. */
  conversation_id?: string;
  signal?: AbortSignal;
  /** Progress of the work before the first token: 'restore' (bytes of saved state) and 'prefill' (prompt tokens). */
  onProgress?: (p: Progress) => void;
  /** When the reply fills the context (and it cannot grow): 'stop' ends it with finish_reason 'length' (default);
   * 'error' fails it with ContextFullError; 'shift' drops the oldest half of the tokens after n_keep and goes on. */
  context_overflow?: 'stop' | 'error' | 'shift' | null;
  /** With 'shift': prompt tokens at the start that are never dropped. Default: the rendered system prompt. */
  n_keep?: number | null;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export type CacheSource = 'none' | 'memory' | 'indexeddb';

export interface Timings {
  /** Prompt tokens decoded for this request (those not taken from a cache). */
  prompt_n: number;
  prompt_ms: number;
  predicted_n: number;
  predicted_ms: number;
  /** Prompt tokens taken from a cache instead of being decoded. */
  cache_n: number;
  cache_source: CacheSource;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export interface AssistantMessage {
  role: 'assistant';
  /** null when the reply is only tool calls. */
  content: string | null;
  /** The model's reasoning (<think>…</think>, gpt-oss's analysis channel), apart from the answer. */
  reasoning_content?: string;
  tool_calls?: ToolCall[];
}

export interface ChunkDelta {
  role?: 'assistant';
  content?: string;
  reasoning_content?: string;
  tool_calls?: ToolCallDelta[];
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: AssistantMessage;
    finish_reason: FinishReason;
    logprobs: ChoiceLogprobs | null;
  }>;
  usage: Usage;
  timings: Timings;
  /** Why the engine did something other than what was asked (e.g. a context shift it could not make). */
  warnings?: string[];
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: ChunkDelta;
    finish_reason: FinishReason | null;
    logprobs: ChoiceLogprobs | null;
  }>;
  /** Only on the last chunk. */
  usage?: Usage;
  /** Only on the last chunk. */
  timings?: Timings;
  /** Only on the last chunk, and only when there are any (see ChatCompletion.warnings). */
  warnings?: string[];
}

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
}

/** Why the engine runs on the backend it does (createEngine's `backend` option). */
export interface BackendSelection {
  requested: Backend;
  /** Plain words: e.g. "no WebGPU adapter", "the adapter lacks shader-f16", "WebGPU self-test passed". */
  reason: string;
  /** The WebGPU adapter the browser offered, if any. */
  adapter: { vendor: string; architecture: string; device: string; description: string; shaderF16: boolean } | null;
  /** The probe comparison with the wasm engine, when it ran: the largest difference of the top next-token
   * log-probabilities, and whether the likeliest tokens agreed. */
  selfTest: { passed: boolean; maxLogprobDiff: number; sameTopTokens: boolean } | null;
}

export interface EngineInfo {
  /** The backend answering now: 'webgpu' is @wllama/wllama (WebGPU, or its CPU build when the GPU is missing). */
  backend: 'wasm' | 'webgpu';
  selection: BackendSelection;
  build: BuildVariant;
  threads: number;
  llamaBuild: string;
  wasmSimd: boolean;
  model: ModelInfo | null;
  nCtx: number;
  /** How the context is sized: its current and largest size, and the memory budget behind the limit. */
  context: {
    nCtx: number; maxCtx: number; dynamic: boolean; nParallel: number; kvBytesPerToken: number; budgetBytes: number;
  } | null;
  /** The KV cache's element types and whether llama.cpp's flash-attention kernel is used (null before a load). */
  kvCache: { typeK: GgmlType; typeV: GgmlType; flashAttention: boolean } | null;
  /** What this backend can do: the wasm engine all of it; 'webgpu' (wllama) no KV persistence, batching, embeddings
   * or context shift. `webgpu`: the browser has navigator.gpu. */
  capabilities: { persistentKv: boolean; batching: boolean; embeddings: boolean; contextShift: boolean; webgpu: boolean; threads: boolean };
  /** A shared engine (EngineOptions.shared): its name, whether this tab runs it, and how many tabs use it. */
  shared: { name: string; leader: boolean; tabs: number } | null;
  /** Where the model store keeps models; null without one. */
  storage: ModelStorage | null;
}

export interface ChatCompletions {
  create(params: ChatCompletionCreateParams & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
  create(params: ChatCompletionCreateParams & { stream?: false | null }): Promise<ChatCompletion>;
  create(params: ChatCompletionCreateParams): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>;
}

export interface EmbeddingCreateParams {
  /** One text or several (embedded together, in batches). */
  input: string | string[];
  model?: string;
  /** Keep the first `dimensions` values (models trained for it, such as Qwen3-Embedding), normalised again. */
  dimensions?: number | null;
  encoding_format?: 'float' | null;
  signal?: AbortSignal;
}

export interface CreateEmbeddingResponse {
  object: 'list';
  /** One unit-length vector per input, in input order. */
  data: Array<{ object: 'embedding'; index: number; embedding: number[] }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface RerankParams {
  query: string;
  documents: string[];
  /** Return only the best `top_n` (default all). */
  top_n?: number | null;
  /** Include each document's text in its result. */
  return_documents?: boolean | null;
  signal?: AbortSignal;
}

export interface RerankResponse {
  model: string;
  /** Best first. */
  results: Array<{ index: number; relevance_score: number; document?: { text: string } }>;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface Embeddings {
  /** For embedding models (a pooling type in the GGUF); InvalidRequestError code 'not_an_embedding_model' otherwise. */
  create(params: EmbeddingCreateParams): Promise<CreateEmbeddingResponse>;
}

/** What a Hearth engine offers, on the page (through the worker) and in the worker itself. */
export interface HearthEngine {
  load(source: ModelSource, options?: LoadOptions): Promise<ModelInfo>;
  readonly chat: { readonly completions: ChatCompletions };
  readonly embeddings: Embeddings;
  /** Scores documents against a query with a reranker model (rank pooling); InvalidRequestError code
   * 'not_a_reranker' for other models. */
  rerank(params: RerankParams): Promise<RerankResponse>;
  readonly cache: EngineCache;
  /** The downloaded models kept for the next load. */
  readonly models: ModelStoreApi;
  info(): Promise<EngineInfo>;
  unload(): Promise<void>;
}
