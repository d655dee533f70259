// The public engine interface (HearthEngine), built once over the flat calls an engine answers (a CallTarget: the
// router over the backends and the services, or another tab's shared engine, and how to stop it). The page's engine (create-engine.ts) and Node's (node.ts) are both
// this, so request validation and defaults, the create() overloads, streams with back-pressure and the assembly of a
// ChatCompletion exist once.
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletions,
  CountTokensParams,
  EmbeddingCreateParams,
  Embeddings,
  EngineCache,
  EngineInfo,
  HearthEngine,
  LoadOptions,
  ModelInfo,
  ModelSource,
  ModelStoreApi,
  RerankParams,
  RerankResponse,
  StoredModelRef,
} from '../types.ts';
import type { CallTarget, EngineCalls } from '../contract.ts';
import { WINDOW } from '../core/rpc/flow.ts';
import { Channel } from './channel.ts';
import { CompletionAssembler, publicChunks } from '../core/chat/completion.ts';
import { embeddingResponse, embedInputs, rerankInputs, rerankResponse } from './embeddings.ts';
import { resolveRequest } from '../core/chat/request.ts';
import { invalidParameter as bad } from '../errors.ts';

export class EngineApi implements HearthEngine {
  readonly chat: { readonly completions: ChatCompletions };
  readonly embeddings: Embeddings;
  readonly cache: EngineCache;
  readonly models: ModelStoreApi;

  protected readonly calls: EngineCalls;

  constructor(private readonly target: CallTarget) {
    const calls = target.calls;
    this.calls = calls;
    const create = (params: ChatCompletionCreateParams) => this.create(params);
    this.chat = { completions: { create } as ChatCompletions };
    this.embeddings = {
      create: (async (params: EmbeddingCreateParams) => {
        const { inputs, ...shape } = embedInputs(params);
        return embeddingResponse(await calls.embed({ inputs }, { signal: params.signal }), shape);
      }) as Embeddings['create'],
    };
    this.cache = {
      stats: () => calls.cacheStats(),
      clear: (options = {}) => calls.cacheClear(options),
      flush: () => calls.cacheFlush(),
      exportPrompt: ({ signal, onProgress, ...request }) => calls.cacheExport(request, { signal, onProgress }),
    };
    this.models = {
      list: () => calls.modelsList(),
      delete: (id: StoredModelRef) => calls.modelsDelete({ id }),
      usage: () => calls.modelsUsage(),
    };
  }

  load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    const { signal, onProgress, ...rest } = options;
    return this.calls.load({ source, options: rest }, { signal, onProgress });
  }

  async rerank(params: RerankParams): Promise<RerankResponse> {
    const { query, documents } = rerankInputs(params);
    return rerankResponse(await this.calls.rank({ query, documents }, { signal: params.signal }), params);
  }

  async countTokens(params: CountTokensParams): Promise<{ prompt_tokens: number }> {
    const { signal } = params;
    if ('text' in params) {
      if (typeof params.text !== 'string') bad('text', `expected a string, got ${typeof params.text}`);
      return { prompt_tokens: (await this.calls.countTokens({ text: params.text }, { signal })).tokens };
    }
    const { onProgress, ...request } = resolveRequest({ ...params, stream: false });
    return { prompt_tokens: (await this.calls.countTokens(request, { signal })).tokens };
  }

  info(): Promise<EngineInfo> {
    return this.calls.info();
  }

  unload(): Promise<void> {
    return this.calls.unload();
  }

  terminate(): void {
    this.target.terminate();
  }

  private async create(
    params: ChatCompletionCreateParams,
  ): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>> {
    // Bad parameters reject here, on the caller's side, before anything is queued.
    const { onProgress, ...request } = resolveRequest(params);
    if (!request.stream) {
      const assembler = new CompletionAssembler();
      await this.calls.complete(request, { signal: params.signal, onProgress, onChunk: (c) => assembler.add(c) });
      return assembler.result();
    }
    // A consumer that leaves the stream early (break) aborts the generation. The stream buffers chunks under the
    // same rule as every boundary they cross (rpc/flow.ts): a reader WINDOW chunks behind slows the generation down.
    const left = new AbortController();
    const signal = params.signal ? AbortSignal.any([params.signal, left.signal]) : left.signal;
    const channel = new Channel<ChatCompletionChunk>(WINDOW, () => left.abort());
    const onChunk = publicChunks(params.stream_options?.include_usage === true, (c) => channel.push(c));
    this.calls.complete(request, { signal, onProgress, onChunk }).then(
      () => channel.end(),
      (err) => channel.fail(err),
    );
    await channel.ready; // errors before the first chunk (ContextFullError, AbortError while queued) reject here
    return channel;
  }
}
