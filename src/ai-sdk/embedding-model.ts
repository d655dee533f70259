// The AI SDK's EmbeddingModelV4 (embed, embedMany) over a Hearth engine with an embedding model loaded.
import type { EmbeddingModelV4, EmbeddingModelV4CallOptions, EmbeddingModelV4Result } from '@ai-sdk/provider';
import { DEFAULT_MODEL_ID, type HearthProviderEngine, type ModelName } from './language-model.ts';

export class HearthEmbeddingModel implements EmbeddingModelV4 {
  readonly specificationVersion = 'v4';
  readonly provider = 'hearth.embedding';
  // Hearth batches the texts of one call itself; embedMany splits longer lists into calls of this size.
  readonly maxEmbeddingsPerCall = 256;
  // One engine, one model: parallel calls would only queue behind each other.
  readonly supportsParallelCalls = false;

  constructor(
    private readonly engine: HearthProviderEngine,
    private readonly id: string | undefined,
    private readonly name: ModelName,
  ) {}

  get modelId(): string {
    return this.id ?? this.name.current ?? DEFAULT_MODEL_ID;
  }

  async doEmbed(options: EmbeddingModelV4CallOptions): Promise<EmbeddingModelV4Result> {
    const res = await this.engine.embeddings.create({
      input: options.values,
      dimensions: options.dimensions,
      signal: options.abortSignal,
    });
    this.name.current = res.model || this.name.current;
    const embeddings = [...res.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
    return { embeddings, usage: { tokens: res.usage.prompt_tokens }, warnings: [] };
  }
}
