// Hearth's typed errors as the DOMException names the Prompt API promises, so code written for Chrome's built-in model
// catches what it expects: a full context is a QuotaExceededError carrying `requested` and `quota`, an abort an
// AbortError (or the signal's own reason), a request the model cannot take a NotSupportedError. The Hearth error
// stays reachable as `cause`.
import { HearthError } from '../errors.ts';

type QuotaClass = new (message: string, options: { requested?: number; quota?: number }) => DOMException;

/** WebIDL's QuotaExceededError (a DOMException with `requested` and `quota`), for browsers that have none yet
 * (Firefox ESR 153): the polyfill installs it there, so `e instanceof QuotaExceededError` holds for what it throws. */
export class QuotaExceededErrorShim extends DOMException {
  readonly requested: number | null;
  readonly quota: number | null;
  constructor(message = '', options: { requested?: number; quota?: number } = {}) {
    super(message, 'QuotaExceededError');
    this.requested = options.requested ?? null;
    this.quota = options.quota ?? null;
  }
}

/** The browser's QuotaExceededError where it has one (its constructor takes the options), else the shim. */
export function quotaExceededClass(): QuotaClass {
  const native = (globalThis as { QuotaExceededError?: QuotaClass }).QuotaExceededError;
  try {
    if (native && (new native('', { requested: 1 }) as { requested?: number }).requested === 1) return native;
  } catch {
    // an older shape: the shim
  }
  return QuotaExceededErrorShim;
}

/** A QuotaExceededError with the tokens asked for and the window, as the specification's. */
export function quotaExceeded(message: string, requested: number, quota: number): DOMException {
  return new (quotaExceededClass())(message, { requested, quota });
}

/** What the page sees for an error out of the engine during `signal`'s call. */
export function domError(err: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason;
  if (!(err instanceof HearthError)) return err;
  const named = (name: string) => Object.assign(new DOMException(err.message, name), { cause: err });
  switch (err.name) {
    case 'AbortError':
      return named('AbortError');
    case 'ContextFullError': {
      const d = err.details as { promptTokens: number; nCtx: number };
      return Object.assign(quotaExceeded(err.message, d.promptTokens, d.nCtx), { cause: err });
    }
    case 'InvalidRequestError':
      return named('NotSupportedError');
    case 'ModelLoadError':
      return named(err.code === 'quota_exceeded' ? 'QuotaExceededError' : 'NetworkError');
    default:
      return named('OperationError');
  }
}

/** The error for a call on a destroyed session. */
export const destroyed = () => new DOMException('the session was destroyed', 'InvalidStateError');
