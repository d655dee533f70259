// Hearth's public API for the page. See README.md for an example.
export { createEngine, defaultThreads, type HearthClient } from './backends/llamacpp/worker/client.ts';
export {
  AbortError, CacheError, ContextFullError, EngineError, HearthError, InvalidRequestError, ModelLoadError,
} from './errors.ts';
export type * from './types.ts';
