// The contract between the API and the backends that answer it: the calls a backend answers (BackendCalls, Backend),
// the services only some engines have (KvStateService, ModelStoreService), how a call is controlled (CallControl), and
// the requests it takes, resolved (ResolvedRequest, SamplerParams). It imports only the public types, so the core,
// every backend, the API and the shared tabs import it downward.
import type {
  CacheStats,
  ExportPromptParams,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatMessage,
  EngineInfo,
  LoadOptions,
  ModelInfo,
  ModelSource,
  ModelStoreUsage,
  Progress,
  StoredModel,
  StoredModelRef,
  Tool,
} from './types.ts';

/** The callbacks and the abort signal of one call. Across a worker's or a tab's boundary the callbacks' calls and
 * an abort travel as messages (core/rpc/rpc.ts). */
export interface CallControl {
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Receives a completion's chunks; the promise it returns resolves when the consumer has room for more. */
  onChunk?: (chunk: ChatCompletionChunk) => void | Promise<void>;
}

/** What exportPrompt() sends the engine: its parameters without the callbacks. */
export type ExportPromptRequest = Omit<ExportPromptParams, 'signal' | 'onProgress'>;

/** What load() sends the engine: the source and the options that are plain data. */
export interface LoadRequest {
  source: ModelSource;
  options: Omit<LoadOptions, 'signal' | 'onProgress'>;
}

/**
 * The calls a backend answers: a model loaded into it, and requests on that model. Hearth's llama.cpp engine is one
 * (backends/llamacpp/), wllama another, an OpenAI-compatible server a third. Each call takes at most one argument
 * that can be copied to a worker (structured clone) and a CallControl, so a backend can run in a worker, or in another
 * tab (api/shared/), behind the RPC layer (core/rpc/rpc.ts).
 */
export interface BackendCalls {
  load(request: LoadRequest, control?: CallControl): Promise<ModelInfo>;
  /** Generates one completion, handing every chunk to control.onChunk; resolves after the final chunk. */
  complete(request: CompletionRequest, control?: CallControl): Promise<void>;
  /** The pooled embeddings of the texts (raw: normalised by the caller). Only where supports.embeddings. */
  embed(request: { inputs: string[] }, control?: CallControl): Promise<EmbedResult>;
  /** A reranker's score of each document against the query. Only where supports.rerank. */
  rank(request: { query: string; documents: string[] }, control?: CallControl): Promise<RankResult>;
  /** The tokens `request`'s prompt takes as the model reads it (chat template, tools and media), or a text's own
   * tokens (no template, no BOS), without running anything. */
  countTokens(request: CompletionRequest | { text: string }, control?: CallControl): Promise<{ tokens: number }>;
  info(): Promise<BackendInfo>;
  unload(): Promise<void>;
}

/** What a backend says of itself in engine.info(); the router adds why it was chosen (selection), a shared engine its
 * tabs (shared). */
export type BackendInfo = Omit<EngineInfo, 'selection' | 'shared'>;

/**
 * A backend as the router (api/router.ts) sees it: its calls, what it supports (checked by backends/supports.ts
 * before each call), and whether it only takes models the others cannot run (a fallback server).
 */
export interface Backend extends BackendCalls {
  /** What it is (engine.info().backend while it holds the model). */
  readonly kind: EngineInfo['backend'];
  /** The load options and requests it honours; anything else is refused before the call. */
  readonly supports: Supports;
  /** Takes only the loads the other backends failed because the model cannot run on this device (router.ts). */
  readonly fallback?: boolean;
  /**
   * Whether it can take this model, decided before loading it (wllama: the adapter's buffer limits). The router asks
   * when another backend could take the model instead. `request`: the same load for that backend, with the model's
   * bytes where this one has already read them, so they are not read (or downloaded) twice.
   */
  fit?(request: LoadRequest, control?: CallControl): Promise<{ refusal: string | null; request: LoadRequest }>;
}

/** What a backend honours. The router refuses the rest with InvalidRequestError 'unsupported_by_backend'. */
export interface Supports {
  /** The load options it acts on, each with the values it takes (true: any); 'all' for every option. */
  loadOptions:
    | 'all'
    | { readonly [K in keyof LoadRequest['options']]?: true | ((value: LoadRequest['options'][K]) => boolean) };
  contextOverflow: ReadonlyArray<ResolvedRequest['contextOverflow']>;
  embeddings: boolean;
  rerank: boolean;
  /** Image and audio content parts (the llama.cpp engine reads them with a projector; a server with its own). */
  media: boolean;
  /** Speculative decoding (ChatCompletionCreateParams.speculative). */
  speculative: boolean;
}

/** The KV state an engine keeps across requests and reloads (engine.cache): only Hearth's llama.cpp engine has one. */
export interface KvStateService {
  cacheStats(): Promise<CacheStats>;
  cacheClear(options: { conversation_id?: string }): Promise<void>;
  cacheFlush(): Promise<void>;
  /** A prompt state file of the loaded model (EngineCache.exportPrompt). */
  cacheExport(request: ExportPromptRequest, control?: CallControl): Promise<Blob>;
}

/** The downloaded models kept for the next load (engine.models): the llama.cpp engine's worker keeps the store. */
export interface ModelStoreService {
  /** Downloads a URL or { hf } model into the model store (if missing); where its files are there, for a page-side
   * backend (wllama) that reads them from the store itself (core/models/page-files.ts). */
  modelsFetch(request: LoadRequest, control?: CallControl): Promise<{ id: string; folder: string; files: string[] }>;
  modelsList(): Promise<StoredModel[]>;
  modelsDelete(request: { id: StoredModelRef }): Promise<boolean>;
  modelsUsage(): Promise<ModelStoreUsage>;
}

/** Every call an engine serves, as one flat set that crosses a boundary (the worker's port: core/rpc/rpc.ts): a
 * backend's and the services'. The llama.cpp engine in its worker serves these. */
export type ServedCalls = BackendCalls & KvStateService & ModelStoreService;

/** What the page's API (api/engine-api.ts) sits on, and what the shared tabs pass around: the router over the
 * backends, with the services (none: api/services.ts). Its info() is engine.info(). */
export interface EngineCalls extends Omit<ServedCalls, 'info'> {
  info(): Promise<EngineInfo>;
}

/** An engine this tab runs (its backends and services, or the shared engine another tab runs for it), and how to
 * stop it. */
export interface CallTarget {
  calls: EngineCalls;
  terminate(): void;
}

/** The sampler chain's settings (wasm/hearth.cpp builds llama.cpp's chain from them). */
export interface SamplerParams {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repeatLastN: number;
  repeatPenalty: number;
  frequencyPenalty: number;
  presencePenalty: number;
  seed: number;
}

/** A reply's constraint as the request gave it: GBNF text, any JSON object, or JSON following a schema. */
export type ReplyConstraint = { grammar: string } | { json: 'object' } | { json: 'schema'; schema: unknown };

/** tool_choice resolved: 'none' when there are no tools; a named choice as the tool's name. */
export type ResolvedToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** A chat.completions request as the caller wrote it, without what cannot leave the page (signal, onProgress). */
export type ChatRequestBody = Omit<ChatCompletionCreateParams, 'signal' | 'onProgress'>;

/** A chat.completions request checked and with its defaults (core/chat/request.ts resolveRequest): the one resolve step
 * every backend shares. A backend that speaks OpenAI's API itself (a server) takes `original`. */
export interface ResolvedRequest {
  original: ChatRequestBody;
  messages: ChatMessage[];
  tools: Tool[] | undefined;
  toolChoice: ResolvedToolChoice;
  parallelToolCalls: boolean;
  /** What the reply must follow: the raw `grammar` (GBNF), or response_format's JSON (a backend that samples with
   * grammars converts it: core/chat/reply-plan.ts; a server takes `original`); null for neither. */
  constraint: ReplyConstraint | null;
  /** Likeliest tokens to report beside each token's log-probability; null: no logprobs. */
  logprobs: number | null;
  /** Variables the chat template gets besides the messages (chat_template_kwargs, reasoning_effort). */
  templateKwargs: Record<string, unknown>;
  /** null: until the context is full. */
  maxTokens: number | null;
  stop: string[];
  stream: boolean;
  sampler: SamplerParams;
  conversationId: string | undefined;
  contextOverflow: 'stop' | 'error' | 'shift';
  /** null: the system prompt. */
  nKeep: number | null;
  /** Speculative decoding (null: off; undefined: the engine's, LoadOptions.speculative). */
  speculative?: Speculative | null;
  onProgress: ((p: Progress) => void) | undefined;
  /** The request's images and audio in message order, read by the engine (core/chat/media.ts); its parts then name
   * them by hash. Absent before that, and for requests without media. */
  media?: RequestMedia[];
}

/** Speculative decoding as the engine runs it (core/speculative.ts checks the options). */
export interface Speculative {
  kind: 'ngram' | 'draft';
  /** Tokens guessed at most a step. */
  nDraft: number;
  /** 'draft': the least probability the draft gives a token it guesses. */
  pMin: number;
}

/** One image or audio clip of a request: its file's bytes and their sha256 (hex). */
export interface RequestMedia {
  kind: 'image' | 'audio';
  bytes: Uint8Array;
  hash: string;
}

/** A validated request (resolveRequest) as the engine takes it; its progress callback travels in CallControl. */
export type CompletionRequest = Omit<ResolvedRequest, 'onProgress'>;

/** What embed() returns: raw pooled vectors, and the tokens read. */
export interface EmbedResult {
  vectors: number[][];
  tokens: number;
  model: string;
}

/** What rerank() returns: one score per document, in document order. */
export interface RankResult {
  scores: number[];
  tokens: number;
  model: string;
}
