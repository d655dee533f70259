// The engine as a whole: its cache, what info() says, and HearthEngine, the interface every engine offers.
import type {
  BackendName,
  BuildVariant,
  GgmlType,
  LoadOptions,
  MediaInputKind,
  ModelInfo,
  ModelSource,
  Progress,
} from './options.ts';
import type { ModelStorage, ModelStoreApi } from './models.ts';
import type { CacheSource, ChatCompletionCreateParams, ChatCompletions, ChatMessage, Tool } from './chat.ts';
import type { Embeddings, RerankParams, RerankResponse } from './embeddings.ts';

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
  /**
   * The computed state of the prompt every conversation starting with `messages` shares (the system prompt, and
   * tools), as a prompt state file for LoadOptions.promptState. Computed on the loaded model with its KV types.
   */
  exportPrompt(params: ExportPromptParams): Promise<Blob>;
}

export interface ExportPromptParams {
  /** The messages every conversation starts with: usually one system message. */
  messages: ChatMessage[];
  tools?: Tool[];
  chat_template_kwargs?: Record<string, unknown>;
  onProgress?: (p: Progress) => void;
  signal?: AbortSignal;
}

/** Why the engine runs on the backend it does (createEngine's `backend` option). */
export interface BackendSelection {
  requested: BackendName | 'remote';
  /** Plain words: e.g. "no WebGPU adapter", "the adapter lacks shader-f16", "WebGPU self-test passed". */
  reason: string;
  /** The WebGPU adapter the browser offered, if any. */
  adapter: {
    vendor: string;
    architecture: string;
    device: string;
    description: string;
    shaderF16: boolean;
    /** The browser calls it a fallback (software) adapter: lavapipe, SwiftShader, WARP. */
    fallback: boolean;
  } | null;
  /** The probe comparison with the CPU engine, when it ran (the GPU engine: the probe model on the GPU against the
   * same engine's CPU; wllama: against the CPU engine): the largest difference of the top next-token
   * log-probabilities, and whether the likeliest tokens agreed. */
  selfTest: { passed: boolean; maxLogprobDiff: number; sameTopTokens: boolean } | null;
  /** Under 'auto', once the GPU engine passed its self-test: its decode speed on the speed probe (tokens/s) and the CPU
   * engine's at `cpuThreads` threads, estimated from the GPU build's CPU at one thread; the GPU engine runs only where
   * it is the faster. Null otherwise. */
  speed?: { gpuTps: number; cpuTps: number; cpuThreads: number } | null;
}

export interface EngineInfo {
  /** The backend answering now: 'wasm' Hearth's engine on the CPU, 'webgpu' the same engine on the GPU (`gpu` says
   * which adapter and layers), 'wllama' @wllama/wllama (WebGPU, or its CPU build when the GPU is missing), 'remote'
   * an OpenAI-compatible server (EngineOptions.backend or .fallback), named in `remote`. */
  backend: 'wasm' | 'webgpu' | 'wllama' | 'remote';
  /** The server answering when `backend` is 'remote', else null. */
  remote: { baseURL: string; model: string } | null;
  /** What the loaded model reads: ['text'], plus 'image' and 'audio' as its projector allows (a server: as it says
   * nothing, ['text', 'image', 'audio'], and its own checks apply). ['text'] without a model. */
  input: MediaInputKind[];
  selection: BackendSelection;
  /** The wasm build running ('mt'/'st', '-relaxed' with relaxed SIMD), and why it was picked; null when none runs
   * (a server answers). */
  build: BuildVariant | null;
  buildReason: string;
  /** llama.cpp's threads on this device; 0 when a server answers. */
  threads: number;
  /** Hearth's version (the npm package's). */
  version: string;
  /** The llama.cpp release and commit the build carries, then a hash of Hearth's patches to it ('' for a server). */
  llamaBuild: string;
  wasmSimd: boolean;
  model: ModelInfo | null;
  nCtx: number;
  /** How the context is sized: its current and largest size, and the memory budget behind the limit. */
  context: {
    nCtx: number;
    maxCtx: number;
    dynamic: boolean;
    nParallel: number;
    kvBytesPerToken: number;
    budgetBytes: number;
  } | null;
  /** Hearth's WebGPU build with an adapter: the GPU llama.cpp runs layers on, its shader path ('f16': the adapter's
   * shader-f16; 'f32': an adapter without it, or EngineOptions.gpuShaderF16 false — f32 arithmetic, f16 data packed in
   * 32-bit words; f16 ops other than matrix products and row reads and writes run on the CPU), and how many of the
   * loaded model's layers run there (llama.cpp's count, the output layer included; 0 of 0 before a load), and where
   * the projector's encoder runs (null without one: images and audio). What the GPU backend cannot run stays on the
   * CPU. `subgroupMatrix`: the matrix products run on the adapter's matrix units (its
   * `chromium-experimental-subgroup-matrix` feature, with shader-f16), not the register-tiled shaders. null for the
   * CPU builds, wllama and a server. */
  gpu: {
    adapter: string;
    shaderPath: 'f16' | 'f32';
    subgroupMatrix: boolean;
    layers: number;
    totalLayers: number;
    projector: 'gpu' | 'cpu' | null;
  } | null;
  /** Hearth's engine's WebAssembly heap: bytes malloc holds now, the most it has held, and the heap's size (which
   * never shrinks; it also holds what llama.cpp maps of a model file, which malloc does not count). null for wllama
   * and a server. */
  wasmHeap: { inUse: number; peak: number; size: number } | null;
  /** The KV cache's element types and whether llama.cpp's flash-attention kernel is used (null before a load). */
  kvCache: { typeK: GgmlType; typeV: GgmlType; flashAttention: boolean } | null;
  /** What this backend can do: Hearth's engine (CPU or GPU) all of it; wllama no KV persistence, batching,
   * embeddings or context shift. `webgpu`: the browser has navigator.gpu. */
  capabilities: {
    persistentKv: boolean;
    batching: boolean;
    embeddings: boolean;
    contextShift: boolean;
    webgpu: boolean;
    threads: boolean;
  };
  /** A shared engine (EngineOptions.shared): its name, whether this tab runs it, and how many tabs use it. */
  shared: { name: string; leader: boolean; tabs: number } | null;
  /** Where the model store keeps models; null without one. */
  storage: ModelStorage | null;
}

/** What countTokens() counts: a chat request's prompt, or a text on its own. */
export type CountTokensParams = ChatCompletionCreateParams | { text: string; signal?: AbortSignal };

/** What a Hearth engine offers: createEngine's on a page (its calls go to the worker, a server or another tab) and
 * createNodeEngine's in Node are both this. */
export interface HearthEngine {
  load(source: ModelSource, options?: LoadOptions): Promise<ModelInfo>;
  readonly chat: { readonly completions: ChatCompletions };
  readonly embeddings: Embeddings;
  /** Scores documents against a query with a reranker model (rank pooling); InvalidRequestError code
   * 'not_a_reranker' for other models. */
  rerank(params: RerankParams): Promise<RerankResponse>;
  /** The tokens a chat.completions request's prompt takes as the loaded model reads it (its chat template, tools,
   * images and audio), without running it: what `usage.prompt_tokens` would say; or, for `{ text }`, the text's own
   * tokens (no template). The wasm and GPU engines count; wllama and a server answer InvalidRequestError
   * 'unsupported_by_backend'. */
  countTokens(params: CountTokensParams): Promise<{ prompt_tokens: number }>;
  readonly cache: EngineCache;
  /** The downloaded models kept for the next load. */
  readonly models: ModelStoreApi;
  info(): Promise<EngineInfo>;
  unload(): Promise<void>;
  /** Ends the engine at once: its worker (or Node's module and threads) stopped, the model and the heap freed; a
   * request in flight and every later call answer EngineError 'terminated'. A shared engine: this tab leaves it, and
   * if this tab ran it, another tab takes it over. */
  terminate(): void;
}
