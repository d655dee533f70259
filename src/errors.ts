// Every error Hearth throws, in one place. Each has a stable `name` and a `code` from its class's union (below, as
// llama.h lists its enums), and survives the trip from the worker to the page and between tabs (toWire/fromWire), so
// `err instanceof ModelLoadError` and `switch (err.code)` work on either side and TypeScript checks every case.

/** ModelLoadError: the model (or its projector, or a prompt state file) could not be fetched or loaded. */
export const MODEL_LOAD_CODES = [
  // the source
  'invalid_source',
  'unsupported_source',
  'not_found',
  'http_error',
  'network_error',
  // the file
  'not_gguf',
  'truncated',
  'invalid_file',
  'too_large',
  'size_mismatch',
  'checksum_mismatch',
  'checksum_unavailable',
  'quota_exceeded',
  // llama.cpp
  'unsupported',
  'unsupported_architecture',
  'unsupported_quantization',
  'invalid_projector',
  'unsupported_projector',
  'invalid_draft',
  'kv_too_large',
  'context_failed',
] as const;
export type ModelLoadErrorCode = (typeof MODEL_LOAD_CODES)[number];

/** InvalidRequestError: the call itself is wrong; the message says what to change (details.param names the option). */
export const INVALID_REQUEST_CODES = [
  'invalid_request',
  'invalid_parameter',
  'no_model',
  'no_store',
  'model_not_found',
  'no_such_model',
  'unsupported_by_backend',
  'unsupported_content',
  'invalid_schema',
  'invalid_grammar',
  'invalid_pattern',
  'invalid_prefix',
  'template_error',
  'input_too_long',
  'not_an_embedding_model',
  'not_a_reranker',
  'images_not_supported',
  'audio_not_supported',
  'invalid_image',
  'invalid_audio',
  'media_too_large',
  'too_many_media',
  'remote_invalid_request',
] as const;
export type InvalidRequestErrorCode = (typeof INVALID_REQUEST_CODES)[number];

/** EngineError: the engine, its worker, the shared engine or a server failed (details.retryable where a retry may
 * work). */
export const ENGINE_CODES = [
  'engine_error',
  'decode_failed',
  'wasm_crash',
  'context_resize_failed',
  'media_encode_failed',
  'backend_error',
  // starting the engine
  'not_initialised',
  'worker_failed',
  'worker_stalled',
  'worker_lost',
  'start_timeout',
  'terminated',
  'csp_blocked',
  'trusted_types_blocked',
  // the GPU engine
  'webgpu_unavailable',
  'gpu_lost',
  'gpu_allocation_failed',
  // the shared engine
  'leader_gone',
  'leader_timeout',
  // a server (EngineOptions.backend / fallback { remote })
  'remote_unreachable',
  'remote_unauthorized',
  'remote_rate_limited',
  'remote_error',
  'remote_timeout',
  'remote_bad_response',
  'remote_stream_ended',
] as const;
export type EngineErrorCode = (typeof ENGINE_CODES)[number];

/** CacheError: the KV cache store failed (only cache.* calls see it; chats never fail because of it). */
export const CACHE_CODES = ['cache_error'] as const;
export type CacheErrorCode = (typeof CACHE_CODES)[number];

export type ContextFullErrorCode = 'context_full';
export type AbortErrorCode = 'aborted';

/** Every code, of every class. */
export type ErrorCode =
  | ModelLoadErrorCode
  | InvalidRequestErrorCode
  | EngineErrorCode
  | CacheErrorCode
  | ContextFullErrorCode
  | AbortErrorCode;

export class HearthError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  constructor(message: string, code: ErrorCode = 'engine_error', details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'HearthError';
    this.code = code;
    this.details = details;
    // V8 keeps the receiver of every frame of an error's stack until the stack is first read: an error thrown from a
    // trapped module's binding, kept by a page, would keep that module and its whole heap. Read once the subclass has
    // named it.
    queueMicrotask(() => void this.stack);
  }
}

/** The model could not be fetched or loaded; `code` says why (MODEL_LOAD_CODES). */
export class ModelLoadError extends HearthError {
  declare readonly code: ModelLoadErrorCode;
  constructor(message: string, code: ModelLoadErrorCode, details: Record<string, unknown> = {}) {
    super(message, code, details);
    this.name = 'ModelLoadError';
  }
}

/** The prompt does not fit the context window. Raised before the first token is streamed. */
export class ContextFullError extends HearthError {
  declare readonly code: ContextFullErrorCode;
  constructor(message: string, details: { promptTokens: number; nCtx: number }) {
    super(message, 'context_full', details);
    this.name = 'ContextFullError';
  }
}

/** The caller aborted (AbortSignal) the load or the request. */
export class AbortError extends HearthError {
  declare readonly code: AbortErrorCode;
  constructor(message = 'The operation was aborted.') {
    super(message, 'aborted');
    this.name = 'AbortError';
  }
}

/** The request itself is wrong (bad parameter, no model loaded); the message says what to change. */
export class InvalidRequestError extends HearthError {
  declare readonly code: InvalidRequestErrorCode;
  constructor(
    message: string,
    code: InvalidRequestErrorCode = 'invalid_request',
    details: Record<string, unknown> = {},
  ) {
    super(message, code, details);
    this.name = 'InvalidRequestError';
  }
}

/** The KV cache store failed. Chats never fail because of it; this reaches only cache.* calls. */
export class CacheError extends HearthError {
  declare readonly code: CacheErrorCode;
  constructor(message: string, code: CacheErrorCode = 'cache_error', details: Record<string, unknown> = {}) {
    super(message, code, details);
    this.name = 'CacheError';
  }
}

/** llama.cpp, the engine's worker or a server failed in a way the call could not recover from. */
export class EngineError extends HearthError {
  declare readonly code: EngineErrorCode;
  constructor(message: string, code: EngineErrorCode = 'engine_error', details: Record<string, unknown> = {}) {
    super(message, code, details);
    this.name = 'EngineError';
  }
}

/** What a call to an engine that was terminated (HearthEngine.terminate) answers. */
export const terminatedError = () => new EngineError('the engine was terminated', 'terminated');

/** The InvalidRequestError of a parameter or option that makes no sense: it names it (details.param) and says what it
 * takes. */
export function invalidParameter(param: string, message: string): never {
  throw new InvalidRequestError(`${param}: ${message}`, 'invalid_parameter', { param });
}

export interface WireError {
  name: string;
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** `code` when it is one of `codes`, else `otherwise`: a wire error comes from another worker or tab, and a code
 * outside the union would break every `switch (err.code)` that TypeScript called complete. */
function known<C extends string>(codes: readonly C[], code: string, otherwise: C): C {
  return (codes as readonly string[]).includes(code) ? (code as C) : otherwise;
}

const revive: Record<string, (w: WireError) => HearthError> = {
  ModelLoadError: (w) => new ModelLoadError(w.message, known(MODEL_LOAD_CODES, w.code, 'unsupported'), w.details),
  ContextFullError: (w) => new ContextFullError(w.message, w.details as { promptTokens: number; nCtx: number }),
  AbortError: (w) => new AbortError(w.message),
  InvalidRequestError: (w) =>
    new InvalidRequestError(w.message, known(INVALID_REQUEST_CODES, w.code, 'invalid_request'), w.details),
  CacheError: (w) => new CacheError(w.message, known(CACHE_CODES, w.code, 'cache_error'), w.details),
  EngineError: (w) => new EngineError(w.message, known(ENGINE_CODES, w.code, 'engine_error'), w.details),
};

export function toWire(err: unknown): WireError {
  if (err instanceof HearthError) {
    return { name: err.name, code: err.code, message: err.message, details: err.details };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  return { name: 'EngineError', code: 'engine_error', message: e.message, details: {} };
}

export function fromWire(w: WireError): HearthError {
  return Object.hasOwn(revive, w.name)
    ? revive[w.name]!(w)
    : new EngineError(w.message, known(ENGINE_CODES, w.code, 'engine_error'), w.details);
}
