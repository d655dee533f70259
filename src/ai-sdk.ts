// Hearth as a provider for Vercel's AI SDK (`ai`): `import { createHearth } from 'hearth-llm/ai-sdk'`, then
// `generateText({ model: createHearth(engine)(), prompt })`. It calls the engine directly, no HTTP in between; only
// types come from '@ai-sdk/provider', so nothing of the AI SDK is bundled.
export { createHearth, type HearthProvider } from './ai-sdk/provider.ts';
export { HearthLanguageModel, type HearthProviderEngine } from './ai-sdk/language-model.ts';
export { HearthEmbeddingModel } from './ai-sdk/embedding-model.ts';
export { HearthRerankingModel } from './ai-sdk/reranking-model.ts';
export type { HearthRequest } from './ai-sdk/convert.ts';
