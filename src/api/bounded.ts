// A self-test (the GPU engine's, wllama's) bounded: it ends, or fails with a typed error, within a time and as soon as
// the page's policy blocks part of it — never a start that hangs.
import { EngineError } from '../errors.ts';
import { cspError, watchCsp } from '../core/csp.ts';

/** A self-test loads a probe model (and for wllama, its worker and wasm): seconds. One that has not ended by then
 * never will (a worker the page's policy blocked, a wedged GPU), and the engine runs on the CPU. */
const SELF_TEST_TIMEOUT_MS = 60_000;

/** A self-test, or an EngineError as soon as the page's CSP blocks part of it (`what`), or when it takes too long. */
export function bounded<T>(test: Promise<T>, what: string): Promise<T> {
  let stop = () => {};
  const failed = new Promise<never>((_, reject) => {
    const csp = watchCsp(undefined, (v) => reject(cspError(what, v)));
    const timer = setTimeout(
      () => reject(new EngineError(`it did not end within ${SELF_TEST_TIMEOUT_MS / 1000} s`, 'start_timeout')),
      SELF_TEST_TIMEOUT_MS,
    );
    stop = () => {
      csp.stop();
      clearTimeout(timer);
    };
  });
  return Promise.race([test, failed]).finally(stop);
}
