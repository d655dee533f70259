// The contract between the API and the backends that answer it: the calls a backend answers (EngineCore), how a call
// is controlled (CallControl), and the requests it takes, resolved (ResolvedRequest, SamplerParams). It imports only
// the public types, so the engine, the binding, the workers and the shared tabs all import it downward.
import type {
  CacheStats, ChatCompletionChunk, ChatMessage, EngineInfo, LoadOptions, ModelInfo, ModelSource, ModelStoreUsage, Progress,
  StoredModel, StoredModelRef, Tool,
} from './types.ts';

/** The callbacks and the abort signal of one call. Across the worker boundary the callbacks travel as proxies and an
 * abort as a message of its own (worker/protocol.ts). */
export interface CallControl {
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Receives a completion's chunks; the promise it returns resolves when the consumer has room for more. */
  onChunk?: (chunk: ChatCompletionChunk) => void | Promise<void>;
}

/** What load() sends the engine: the source and the options that are plain data. */
export interface LoadRequest {
  source: ModelSource;
  options: Omit<LoadOptions, 'signal' | 'onProgress'>;
}

/** An engine this tab runs (a worker, or the shared engine another tab runs for it): its core and how to stop it. */
export interface LocalEngine {
  core: EngineCore;
  terminate(): void;
}

/**
 * The calls an engine answers. Each takes at most one argument that can be copied to a worker (structured clone)
 * and a CallControl; the worker protocol is derived from this interface, so a new call needs no protocol code.
 */
export interface EngineCore {
  load(request: LoadRequest, control?: CallControl): Promise<ModelInfo>;
  /** Generates one completion, handing every chunk to control.onChunk; resolves after the final chunk. */
  complete(request: CompletionRequest, control?: CallControl): Promise<void>;
  /** The pooled embeddings of the texts (raw: normalised by the caller). */
  embed(request: { inputs: string[] }, control?: CallControl): Promise<EmbedResult>;
  /** A reranker's score of each document against the query. */
  rank(request: { query: string; documents: string[] }, control?: CallControl): Promise<RankResult>;
  info(): Promise<EngineInfo>;
  unload(): Promise<void>;
  cacheStats(): Promise<CacheStats>;
  cacheClear(options: { conversation_id?: string }): Promise<void>;
  cacheFlush(): Promise<void>;
  /** Downloads a URL or { hf } model into the model store (if missing); where its files are there. For a page-side
   * backend (webgpu) that reads them from OPFS itself. */
  modelsFetch(request: LoadRequest, control?: CallControl): Promise<{ id: string; folder: string; files: string[] }>;
  modelsList(): Promise<StoredModel[]>;
  modelsDelete(request: { id: StoredModelRef }): Promise<boolean>;
  modelsUsage(): Promise<ModelStoreUsage>;
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

/** tool_choice resolved: 'none' when there are no tools; a named choice as the tool's name. */
export type ResolvedToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** A chat.completions request checked and with its defaults (api/request.ts resolveRequest). */
export interface ResolvedRequest {
  messages: ChatMessage[];
  tools: Tool[] | undefined;
  toolChoice: ResolvedToolChoice;
  parallelToolCalls: boolean;
  /** GBNF the reply must follow: response_format's (converted here) or the raw `grammar`; null for none. */
  grammar: string | null;
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
  onProgress: ((p: Progress) => void) | undefined;
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
