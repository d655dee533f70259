// Hearth's public API for the page. See README.md for an example.
export { createEngine, defaultThreads, type HearthClient } from './create-engine.ts';
export {
  AbortError,
  CacheError,
  ContextFullError,
  EngineError,
  HearthError,
  InvalidRequestError,
  ModelLoadError,
} from './errors.ts';
export type {
  AbortErrorCode,
  CacheErrorCode,
  ContextFullErrorCode,
  EngineErrorCode,
  ErrorCode,
  InvalidRequestErrorCode,
  ModelLoadErrorCode,
} from './errors.ts';
export type * from './types.ts';
