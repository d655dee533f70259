// The engine's worker, kept running. A worker can end while the page lives: the browser ends it (memory pressure, a
// crash below the JavaScript), an error nothing caught reaches its top, or a script terminates it. Then the calls in
// flight fail with EngineError 'worker_lost' (retryable), and a new worker starts by itself: the same build, the same
// options — so the same KV cache in IndexedDB and the same model store — and the model the lost one had, loaded again
// before the next call runs. What the lost worker held only in memory (KV state not yet saved) is gone; what it saved
// is found again, so the next request answers as a cold engine would, from the saved prefix where there is one.
import type { BackendInfo, CallControl, ServedCalls } from '../../../contract.ts';
import { rpcStubs } from '../../../core/rpc/rpc.ts';
import { EngineError, type ModelLoadError, terminatedError } from '../../../errors.ts';
import { fitsMemory64, withoutMemory64 } from './memory64.ts';

/** One worker as this file uses it (client.ts's WorkerClient; named here, so that the two files import one way). */
export interface OneWorker {
  readonly calls: ServedCalls;
  started: BackendInfo | null;
  /** Called once when the worker ends without being told to. */
  onLost: ((err: EngineError) => void) | null;
  terminate(reason?: EngineError): void;
}

// A worker that ends again and again (a model that kills it while loading) is not started forever.
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 60_000;

export class LastingWorker {
  readonly calls: ServedCalls;
  private current: OneWorker;
  /** A new worker starting, and loading the lost one's model: calls wait for it. */
  private replacing: Promise<OneWorker> | null = null;
  /** The argument of the last load that succeeded (null after unload): what a new worker loads. */
  private loaded: unknown = null;
  private restarts: number[] = [];
  private ended: Error | null = null;

  /**
   * `wider`: starts a worker on the memory64 build, for a model too large for this one's heap (memory64.ts), or why
   * none can run here; null where no move applies.
   */
  constructor(
    first: OneWorker,
    private startNew: () => Promise<OneWorker>,
    private wider: (() => Promise<OneWorker>) | string | null = null,
  ) {
    this.current = first;
    first.onLost = (err) => this.replace(first, err);
    this.calls = rpcStubs<ServedCalls>((method, argument, control) => this.call(method, argument, control));
  }

  /** What the engine said of itself when its first worker started. */
  get started(): BackendInfo | null {
    return this.current.started;
  }

  terminate(reason?: EngineError): void {
    this.ended ??= reason ?? terminatedError();
    this.current.terminate(reason);
    this.replacing?.then((w) => w.terminate(reason)).catch(() => {});
  }

  private async call(method: keyof ServedCalls, argument: unknown, control: CallControl): Promise<unknown> {
    if (this.ended) throw this.ended;
    const worker = this.replacing ? await this.replacing : this.current;
    const call = worker.calls[method] as (a: unknown, c: CallControl) => Promise<unknown>;
    if (method === 'load') this.loaded = null;
    let value: unknown;
    try {
      value = await call(argument, control);
    } catch (err) {
      if (method === 'load' && worker === this.current && this.wider && fitsMemory64(err)) {
        return this.widen(argument, control, err);
      }
      throw err;
    }
    if (method === 'load' && worker === this.current) this.loaded = argument;
    if (method === 'unload') this.loaded = null;
    return value;
  }

  /** Loads the model a wasm32 worker refused as too large on a memory64 worker, which takes its place (and is what a
   * restart starts from then on); where none can run, the refusal says why. */
  private async widen(argument: unknown, control: CallControl, refused: ModelLoadError) {
    const start = this.wider!;
    if (typeof start === 'string') throw withoutMemory64(refused, start);
    const next = await start().catch((e: Error) => {
      throw withoutMemory64(refused, `the memory64 build could not start (${e.message})`);
    });
    let value: unknown;
    try {
      value = await next.calls.load(argument as never, control);
    } catch (err) {
      next.terminate();
      throw err;
    }
    const old = this.current;
    old.onLost = null;
    old.terminate();
    this.current = next;
    next.onLost = (e) => this.replace(next, e);
    this.startNew = start;
    this.wider = null;
    this.loaded = argument;
    return value;
  }

  private replace(lost: OneWorker, err: EngineError) {
    if (lost !== this.current || this.ended) return;
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    if (this.restarts.length >= MAX_RESTARTS) {
      this.ended = new EngineError(
        `${err.message}; it stopped ${MAX_RESTARTS + 1} times within ${RESTART_WINDOW_MS / 1000} s, so no new one was ` +
          'started (create the engine again to retry)',
        'worker_lost',
      );
      return;
    }
    this.restarts.push(now);
    console.warn(`[hearth] ${err.message}: starting a new engine worker`);
    const loaded = this.loaded;
    const replacing = (async () => {
      const next = await this.startNew();
      if (this.ended) {
        next.terminate();
        throw this.ended;
      }
      this.current = next;
      next.onLost = (e) => this.replace(next, e);
      if (loaded !== null) {
        try {
          await next.calls.load(loaded as never, {});
          this.loaded = loaded;
        } catch (e) {
          // The engine runs without a model: the next chat says so (no model loaded), and a load works as before.
          console.warn(`[hearth] the new engine worker could not load the model again: ${(e as Error).message}`);
        }
      }
      return next;
    })();
    this.replacing = replacing;
    replacing.then(
      () => {
        if (this.replacing === replacing) this.replacing = null;
      },
      (e: Error) => {
        if (this.replacing !== replacing) return;
        this.replacing = null;
        this.ended ??= e; // no worker could start: every call says why
      },
    );
  }
}
