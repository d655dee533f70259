// The public engine interface (HearthEngine), built once over the flat calls an engine answers (EngineCore). The
// page client hands EngineApi a core whose calls cross to the worker (backends/llamacpp/worker/client.ts); the engine in the worker and
// in Node is such a core itself (backends/llamacpp/engine.ts). So request validation and defaults, the create() overloads,
// streams with back-pressure and the assembly of a ChatCompletion exist once, for both.
import type {
  ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams, ChatCompletions, EmbeddingCreateParams, Embeddings,
  EngineCache, EngineInfo, HearthEngine, LoadOptions, ModelInfo, ModelSource, ModelStoreApi, RerankParams, RerankResponse,
  StoredModelRef,
} from '../types.ts';
import type { EngineCore } from '../contract.ts';
import { WINDOW } from '../core/rpc/flow.ts';
import { Channel } from './channel.ts';
import { CompletionAssembler, publicChunks } from '../core/completion.ts';
import { embeddingResponse, embedInputs, rerankInputs, rerankResponse } from './embeddings.ts';
import { resolveRequest } from '../core/request.ts';

export class EngineApi implements HearthEngine {
  readonly chat: { readonly completions: ChatCompletions };
  readonly embeddings: Embeddings;
  readonly cache: EngineCache;
  readonly models: ModelStoreApi;

  constructor(protected readonly core: EngineCore) {
    const create = (params: ChatCompletionCreateParams) => this.create(params);
    this.chat = { completions: { create } as ChatCompletions };
    this.embeddings = {
      create: (async (params: EmbeddingCreateParams) => {
        const { inputs, ...shape } = embedInputs(params);
        return embeddingResponse(await core.embed({ inputs }, { signal: params.signal }), shape);
      }) as Embeddings['create'],
    };
    this.cache = {
      stats: () => core.cacheStats(),
      clear: (options = {}) => core.cacheClear(options),
      flush: () => core.cacheFlush(),
      exportPrompt: ({ signal, onProgress, ...request }) => core.cacheExport(request, { signal, onProgress }),
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
    // A consumer that leaves the stream early (break) aborts the generation. The stream buffers chunks under the
    // same rule as every boundary they cross (rpc/flow.ts): a reader WINDOW chunks behind slows the generation down.
    const left = new AbortController();
    const signal = params.signal ? AbortSignal.any([params.signal, left.signal]) : left.signal;
    const channel = new Channel<ChatCompletionChunk>(WINDOW, () => left.abort());
    const onChunk = publicChunks(params.stream_options?.include_usage === true, (c) => channel.push(c));
    this.core.complete(request, { signal, onProgress, onChunk })
      .then(() => channel.end(), (err) => channel.fail(err));
    await channel.ready; // errors before the first chunk (ContextFullError, AbortError while queued) reject here
    return channel;
  }
}
