// createHearth(engine): an AI SDK provider (ProviderV4) over one Hearth engine. `hearth()` is its language model,
// `hearth.embeddingModel()` and `hearth.rerankingModel()` the others; model ids are informational, since the engine
// has one model loaded (by default they report that model's name).
import type { EmbeddingModelV4, LanguageModelV4, ProviderV4, RerankingModelV4 } from '@ai-sdk/provider';
import { InvalidRequestError } from '../errors.ts';
import { HearthEmbeddingModel } from './embedding-model.ts';
import { HearthLanguageModel, type HearthProviderEngine, type ModelName } from './language-model.ts';
import { HearthRerankingModel } from './reranking-model.ts';

export interface HearthProvider extends ProviderV4 {
  (modelId?: string): LanguageModelV4;
  languageModel(modelId?: string): LanguageModelV4;
  embeddingModel(modelId?: string): EmbeddingModelV4;
  /** The name AI SDK 5 used for embeddingModel. */
  textEmbeddingModel(modelId?: string): EmbeddingModelV4;
  rerankingModel(modelId?: string): RerankingModelV4;
  /** Hearth generates no images: throws InvalidRequestError. */
  imageModel(modelId: string): never;
}

export function createHearth(engine: HearthProviderEngine): HearthProvider {
  const name: ModelName = { current: undefined };
  // The default model id is the loaded model's name: asked once here, and updated by every response.
  engine.info().then(
    (info) => (name.current ??= info.model?.name || undefined),
    () => {},
  );
  const languageModel = (modelId?: string) => new HearthLanguageModel(engine, modelId, name);
  const embeddingModel = (modelId?: string) => new HearthEmbeddingModel(engine, modelId, name);
  const provider = (modelId?: string) => languageModel(modelId);
  return Object.assign(provider, {
    specificationVersion: 'v4' as const,
    languageModel,
    embeddingModel,
    textEmbeddingModel: embeddingModel,
    rerankingModel: (modelId?: string) => new HearthRerankingModel(engine, modelId, name),
    imageModel: (modelId: string): never => {
      throw new InvalidRequestError(
        `Hearth has no image models (asked for ${JSON.stringify(modelId)})`,
        'no_such_model',
        { modelId },
      );
    },
  });
}
