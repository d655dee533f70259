// Every error Hearth throws, in one place. Each has a stable `name` and `code`, and survives the trip from the
// worker to the page (toWire/fromWire), so `err instanceof ModelLoadError` and `err.code` work on either side.

export class HearthError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown>;
  constructor(message: string, code = 'hearth_error', details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'HearthError';
    this.code = code;
    this.details = details;
  }
}

/** The model could not be fetched or loaded. `code` says why: http_error, not_gguf, truncated, too_large, unsupported, no_model. */
export class ModelLoadError extends HearthError {
  constructor(message: string, code: string, details: Record<string, unknown> = {}) {
    super(message, code, details);
    this.name = 'ModelLoadError';
  }
}

/** The prompt does not fit the context window. Raised before the first token is streamed. */
export class ContextFullError extends HearthError {
  constructor(message: string, details: { promptTokens: number; nCtx: number }) {
    super(message, 'context_full', details);
    this.name = 'ContextFullError';
  }
}

/** The caller aborted (AbortSignal) the load or the request. */
export class AbortError extends HearthError {
  constructor(message = 'The operation was aborted.') {
    super(message, 'aborted');
    this.name = 'AbortError';
  }
}

/** The request itself is wrong (bad parameter, no model loaded); the message says what to change. */
export class InvalidRequestError extends HearthError {
  constructor(message: string, code = 'invalid_request', details: Record<string, unknown> = {}) {
    super(message, code, details);
    this.name = 'InvalidRequestError';
  }
}

/** The KV cache store failed. Chats never fail because of it; this reaches only cache.* calls. */
export class CacheError extends HearthError {
  constructor(message: string, code = 'cache_error', details: Record<string, unknown> = {}) {
    super(message, code, details);
    this.name = 'CacheError';
  }
}

/** llama.cpp failed in a way the engine could not recover from in place (the wasm module is reloaded). */
export class EngineError extends HearthError {
  constructor(message: string, code = 'engine_error', details: Record<string, unknown> = {}) {
    super(message, code, details);
    this.name = 'EngineError';
  }
}

export interface WireError {
  name: string;
  code: string;
  message: string;
  details: Record<string, unknown>;
}

const revive: Record<string, (w: WireError) => HearthError> = {
  ModelLoadError: (w) => new ModelLoadError(w.message, w.code, w.details),
  ContextFullError: (w) => new ContextFullError(w.message, w.details as { promptTokens: number; nCtx: number }),
  AbortError: (w) => new AbortError(w.message),
  InvalidRequestError: (w) => new InvalidRequestError(w.message, w.code, w.details),
  CacheError: (w) => new CacheError(w.message, w.code, w.details),
  EngineError: (w) => new EngineError(w.message, w.code, w.details),
};

export function toWire(err: unknown): WireError {
  if (err instanceof HearthError) {
    return { name: err.name, code: err.code, message: err.message, details: err.details };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  return { name: 'EngineError', code: 'engine_error', message: e.message, details: {} };
}

export function fromWire(w: WireError): HearthError {
  return revive[w.name]?.(w) ?? new HearthError(w.message, w.code, w.details);
}
