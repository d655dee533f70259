import { AbortError } from '../errors.ts';

/**
 * `promise`, or an AbortError as soon as `signal` aborts, whichever comes first; `onAbort` then runs once (to tell
 * whoever does the work to stop). The one abort-aware wait of the RPC layer's calls, the shared tabs and the
 * model gate (the scheduler's queue keeps its own rule: an abort counts only while a turn waits).
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, onAbort?: () => void): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    onAbort?.();
    return Promise.reject(new AbortError());
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      onAbort?.();
      reject(new AbortError());
    };
    signal.addEventListener('abort', abort, { once: true });
    void promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}
