// The AI SDK's RerankingModelV4 (rerank) over a Hearth engine with a reranker loaded.
import type { RerankingModelV4, RerankingModelV4CallOptions, RerankingModelV4Result } from '@ai-sdk/provider';
import { DEFAULT_MODEL_ID, type HearthProviderEngine, type ModelName } from './language-model.ts';

export class HearthRerankingModel implements RerankingModelV4 {
  readonly specificationVersion = 'v4';
  readonly provider = 'hearth.reranking';

  constructor(
    private readonly engine: HearthProviderEngine,
    private readonly id: string | undefined,
    private readonly name: ModelName,
  ) {}

  get modelId(): string {
    return this.id ?? this.name.current ?? DEFAULT_MODEL_ID;
  }

  async doRerank(options: RerankingModelV4CallOptions): Promise<RerankingModelV4Result> {
    // A reranker reads text: JSON documents are scored as their JSON text.
    const documents =
      options.documents.type === 'text'
        ? options.documents.values
        : options.documents.values.map((v) => JSON.stringify(v));
    const res = await this.engine.rerank({
      query: options.query,
      documents,
      top_n: options.topN,
      signal: options.abortSignal,
    });
    this.name.current = res.model || this.name.current;
    return {
      ranking: res.results.map((r) => ({ index: r.index, relevanceScore: r.relevance_score })),
      response: { modelId: res.model },
    };
  }
}
