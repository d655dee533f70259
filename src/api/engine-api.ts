// The public engine interface (HearthEngine), built once over the flat calls an engine answers (EngineCore). The
// page client hands EngineApi a core whose calls cross to the worker (worker/client.ts); the engine in the worker and
// in Node is such a core itself (engine/engine.ts). So request validation and defaults, the create() overloads,
// streams with back-pressure and the assembly of a ChatCompletion exist once, for both.
import type {
  CacheStats, ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams, ChatCompletions, EmbeddingCreateParams,
  Embeddings, EngineCache, EngineInfo, HearthEngine, LoadOptions, ModelInfo, ModelSource, ModelStoreApi, ModelStoreUsage,
  Progress, RerankParams, RerankResponse, StoredModel, StoredModelRef,
} from '../types.ts';
import { Channel } from './channel.ts';
import { CompletionAssembler } from './completion.ts';
import { embeddingResponse, embedInputs, type EmbedResult, type RankResult, rerankInputs, rerankResponse } from './embeddings.ts';
import { resolveRequest, type ResolvedRequest } from './request.ts';

/** The callbacks and the abort signal of one call. Across the worker boundary the callbacks travel as proxies and an
 * abort as a message of its own (worker/protocol.ts). */
export interface CallControl {
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Receives a completion's chunks; the promise it returns resolves when the consumer has room for more. */
  onChunk?: (chunk: ChatCompletionChunk) => void | Promise<void>;
}

/** A validated request (resolveRequest) as the engine takes it; its progress callback travels in CallControl. */
export type CompletionRequest = Omit<ResolvedRequest, 'onProgress'>;

/** What load() sends the engine: the source and the options that are plain data. */
export interface LoadRequest {
  source: ModelSource;
  options: Omit<LoadOptions, 'signal' | 'onProgress'>;
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

/** Chunks a stream buffers before a consumer that does not read slows the generation down. */
const STREAM_BUFFER = 16;

export class EngineApi implements HearthEngine {
  readonly chat: { readonly completions: ChatCompletions };
  readonly embeddings: Embeddings;
  readonly cache: EngineCache;
  readonly models: ModelStoreApi;

  constructor(protected readonly core: EngineCore) {
    const create = (params: ChatCompletionCreateParams) => this.create(params);
    this.chat = { completions: { create } as ChatCompletions };
    this.embeddings = {
      create: async (params: EmbeddingCreateParams) => {
        const { inputs, dimensions } = embedInputs(params);
        return embeddingResponse(await core.embed({ inputs }, { signal: params.signal }), dimensions);
      },
    };
    this.cache = {
      stats: () => core.cacheStats(),
      clear: (options = {}) => core.cacheClear(options),
      flush: () => core.cacheFlush(),
    };
    this.models = {
      list: () => core.modelsList(),
      delete: (id: StoredModelRef) => core.modelsDelete({ id }),
      usage: () => core.modelsUsage(),
    };
  }

  load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    const { signal, onProgress, ...rest } = options;
    return this.core.load({ source, options: rest }, { signal, onProgress });
  }

  async rerank(params: RerankParams): Promise<RerankResponse> {
    const { query, documents } = rerankInputs(params);
    return rerankResponse(await this.core.rank({ query, documents }, { signal: params.signal }), params);
  }

  info(): Promise<EngineInfo> {
    return this.core.info();
  }

  unload(): Promise<void> {
    return this.core.unload();
  }

  private async create(params: ChatCompletionCreateParams): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>> {
    // Bad parameters reject here, on the caller's side, before anything is queued.
    const { onProgress, ...request } = resolveRequest(params);
    if (!request.stream) {
      const assembler = new CompletionAssembler();
      await this.core.complete(request, { signal: params.signal, onProgress, onChunk: (c) => assembler.add(c) });
      return assembler.result();
    }
    // A consumer that leaves the stream early (break) aborts the generation.
    const left = new AbortController();
    const signal = params.signal ? AbortSignal.any([params.signal, left.signal]) : left.signal;
    const channel = new Channel<ChatCompletionChunk>(STREAM_BUFFER, () => left.abort());
    this.core.complete(request, { signal, onProgress, onChunk: (c) => channel.push(c) })
      .then(() => channel.end(), (err) => channel.fail(err));
    await channel.ready; // errors before the first chunk (ContextFullError, AbortError while queued) reject here
    return channel;
  }
}
