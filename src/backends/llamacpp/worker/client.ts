// The page's side of the llama.cpp engine's worker: starting it (the build for this browser and page, its files, a
// start that stalls or is blocked by the page's policy), and its calls as stubs over the RPC layer (core/rpc/rpc.ts).
import type { BackendInfo, ServedCalls } from '../../../contract.ts';
import { assetsIn, type Assets, defaultAssets } from '../../../core/assets.ts';
import { cspError, watchCsp } from '../../../core/csp.ts';
import { RpcClient, type RpcMessage, rpcStubs } from '../../../core/rpc/rpc.ts';
import { scriptUrl, TRUSTED_TYPES_HINT } from '../../../core/trusted-types.ts';
import { EngineError, fromWire, terminatedError } from '../../../errors.ts';
import type { CacheOptions, SimdChoice } from '../../../types.ts';
import type { HostInit, StartMessage, StartReply, StartStage } from './protocol.ts';
import { LastingWorker } from './restart.ts';
import { chooseBuild } from './simd.ts';
import { memory64Init } from './memory64.ts';

// Between loading its glue script and asking for the wasm, the worker runs only JavaScript and creates the pthread
// workers: milliseconds. Firefox sometimes never returns from creating them on a cross-origin isolated page while it
// tears down the previous page's processes (a reload: about 1 start in 10 there); a fresh worker then starts. Network
// time (the scripts, the wasm) is not in this window, so a slow connection never trips it.
const STALL_MS = 5_000;
// Terminating the stalled worker is itself a teardown, so the next start can stall too (seen once in CI, Firefox
// under load); a third start has not been seen to stall.
const MAX_STARTS = 3;
// The whole start: the worker script, the glue and the wasm (3–4 MB) fetched and compiled. Generous for a slow
// connection; what it guards against is a start that never ends (a blocked script nothing reports), which would also
// hold a shared engine's lock and so every tab of the site.
const START_TIMEOUT_MS = 120_000;

/** Half the logical cores (ggml wants physical cores and spins while waiting), at most 8, at least 1. */
export function defaultThreads(): number {
  const cores = (typeof navigator !== 'undefined' && navigator.hardwareConcurrency) || 2;
  return Math.max(1, Math.min(8, Math.floor(cores / 2)));
}

/** What the page asks of the worker (createEngine's options, checked). */
export interface WorkerOptions {
  /** Asked for (EngineOptions.threads); default defaultThreads(). Without cross-origin isolation: 1. */
  threads?: number;
  simd: SimdChoice;
  assetsUrl?: string;
  maxModelBytes?: number;
  hfEndpoint?: string;
  cache?: CacheOptions;
}

/** The worker's start: the build for this page (threads need cross-origin isolation) and the URL of every file. */
export function workerInit(options: WorkerOptions): HostInit {
  // Threads need SharedArrayBuffer, which browsers give only to cross-origin isolated pages (COOP + COEP headers).
  const isolated = globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer !== 'undefined';
  let threads = options.threads ?? defaultThreads();
  if (!isolated && threads > 1) {
    if (options.threads !== undefined) {
      console.warn(
        '[hearth] this page is not cross-origin isolated (COOP/COEP headers), so llama.cpp runs on 1 thread',
      );
    }
    threads = 1;
  }
  const base = typeof document !== 'undefined' ? document.baseURI : globalThis.location.href;
  const assets: Assets = options.assetsUrl !== undefined ? assetsIn(options.assetsUrl, base) : defaultAssets(base);
  // One thread needs no pthreads: the single-thread build avoids their shared-memory overhead.
  const threadsWhy =
    threads > 1 ? `${threads} threads` : isolated ? '1 thread' : '1 thread (the page is not cross-origin isolated)';
  const { variant, reason } = chooseBuild(threads > 1, options.simd, threadsWhy);
  return {
    variant,
    buildReason: reason,
    threads,
    assets,
    maxModelBytes: options.maxModelBytes,
    hfEndpoint: options.hfEndpoint,
    cache: options.cache,
  };
}

/** Starts the engine's worker, again when a start stalls (at most MAX_STARTS times); a new one whenever it is lost
 * (restart.ts). */
export async function startEngineWorker(init: HostInit): Promise<LastingWorker> {
  const start = () => startOnce(init);
  const wide = memory64Init(init);
  return new LastingWorker(await start(), start, typeof wide === 'object' && wide ? () => startOnce(wide) : wide);
}

async function startOnce(init: HostInit): Promise<WorkerClient> {
  for (let attempt = 1; ; attempt++) {
    const worker = new WorkerClient(startWorker(init.assets['engine.worker.js']));
    try {
      await worker.start(init);
      return worker;
    } catch (err) {
      if (!(err instanceof EngineError && err.code === 'worker_stalled') || attempt === MAX_STARTS) throw err;
      console.warn('[hearth] the engine worker stalled while starting; starting a new one');
    }
  }
}

/** The engine worker; a page policy that forbids it is a typed error that names what to change. */
function startWorker(url: string): Worker {
  const csp = watchCsp();
  try {
    return new Worker(scriptUrl(url));
  } catch (err) {
    if ((err as Error).name === 'SecurityError') {
      throw cspError('the engine worker', csp.seen[0] ?? { directive: 'worker-src', blockedURI: url });
    }
    if (err instanceof TypeError && /Trusted/i.test(err.message)) {
      throw new EngineError(`the engine worker could not start: ${TRUSTED_TYPES_HINT}`, 'trusted_types_blocked');
    }
    throw err;
  } finally {
    csp.stop();
  }
}

/** The llama.cpp engine in one worker: its calls go over a MessagePort through the RPC layer. */
export class WorkerClient {
  readonly calls: ServedCalls;
  /** What the engine said of itself when it started (its model store's kind, its build). */
  started: BackendInfo | null = null;
  /** Called once when the worker, started, ends without being told to (terminate()): the browser ended it, someone
   * terminated it, or an error nothing caught reached its top. */
  onLost: ((err: EngineError) => void) | null = null;
  private readonly port: MessagePort;
  /** The worker's end of the port, handed over at start. */
  private hostPort: MessagePort | null;
  private readonly rpc: RpcClient;
  private dead: Error | null = null;
  /** The start's own wait, ended by a dying worker too. */
  private starting: ((err: Error) => void) | null = null;

  constructor(private readonly worker: Worker) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.rpc = new RpcClient((m) => port1.postMessage(m));
    port1.onmessage = (e: MessageEvent<RpcMessage>) => this.rpc.receive(e.data);
    this.calls = rpcStubs<ServedCalls>((method, argument, control) =>
      this.dead ? Promise.reject(this.dead) : this.rpc.call(method, argument, control),
    );
    this.hostPort = port2;
    worker.addEventListener('error', (e) => {
      if (this.started) return this.lose(`an error nothing caught reached its top (${e.message})`);
      this.fail(
        new EngineError(
          `the engine worker failed: ${e.message || 'it could not be started (is engine.worker.js served?)'}`,
          'worker_failed',
        ),
      );
    });
  }

  /**
   * Starts the engine; a start that stalls (STALL_MS) terminates the worker and rejects with code 'worker_stalled'.
   * A start the page's CSP blocks rejects with 'csp_blocked'; one that has not ended in START_TIMEOUT_MS with
   * 'start_timeout'.
   */
  async start(init: HostInit): Promise<void> {
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const onStage = (stage: StartStage) => {
      clearTimeout(watchdog);
      if (stage !== 'script') return;
      watchdog = setTimeout(
        () =>
          this.terminate(
            new EngineError(
              `the engine worker stalled for ${STALL_MS / 1000} s while creating its threads (reload the page to try again)`,
              'worker_stalled',
            ),
          ),
        STALL_MS,
      );
    };
    const csp = watchCsp();
    const deadline = setTimeout(
      () =>
        this.terminate(
          csp.seen.length
            ? cspError('the engine', csp.seen[0]!)
            : new EngineError(
                `the engine did not start within ${START_TIMEOUT_MS / 1000} s: its files (${init.assets['engine.worker.js'].replace(/[^/]*$/, '')}) did not load. ` +
                  'Check the connection and that they are served.',
                'start_timeout',
              ),
        ),
      START_TIMEOUT_MS,
    );
    try {
      if (this.dead) throw this.dead;
      const port = this.hostPort!;
      this.hostPort = null;
      const died = new Promise<never>((_, reject) => (this.starting = reject));
      const lifeLock = globalThis.navigator?.locks ? `hearth-engine-worker:${crypto.randomUUID()}` : undefined;
      const result = await Promise.race([this.startWorker({ ...init, lifeLock }, port, onStage), died]);
      if (!result.ok) throw fromWire(result.error);
      this.started = result.value;
      // The worker holds this lock for its life (host.ts): the browser grants it here when the worker is gone, however
      // it went. Nothing else tells a page that a worker ended.
      if (lifeLock) void navigator.locks.request(lifeLock, () => this.lose('the browser ended it'));
    } catch (err) {
      // A worker the page's policy refused fails as 'worker_failed'; the violation says why (it may come a moment
      // later).
      if (err instanceof EngineError && err.code === 'worker_failed') {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (csp.seen.length && !(err instanceof EngineError && err.code === 'csp_blocked')) {
        throw cspError('the engine worker', csp.seen[0]!);
      }
      throw err;
    } finally {
      this.starting = null;
      clearTimeout(watchdog);
      clearTimeout(deadline);
      csp.stop();
    }
  }

  /** Posts the start (protocol.ts) and resolves with its result; the stages go to `onStage` as they come. */
  private startWorker(init: HostInit, calls: MessagePort, onStage: (stage: StartStage) => void) {
    return new Promise<StartReply & { kind: 'started' }>((resolve) => {
      const onMessage = (e: MessageEvent<StartReply>) => {
        if (e.data?.kind === 'stage') onStage(e.data.stage);
        if (e.data?.kind !== 'started') return;
        this.worker.removeEventListener('message', onMessage);
        resolve(e.data);
      };
      this.worker.addEventListener('message', onMessage);
      this.worker.postMessage({ kind: 'start', init, calls } satisfies StartMessage, [calls]);
    }).then((reply) => reply.result);
  }

  terminate(reason = terminatedError()): void {
    this.worker.terminate();
    this.port.close();
    this.fail(reason);
  }

  /** The worker ended by itself: calls in flight fail with 'worker_lost', and onLost hears of it. */
  private lose(how: string) {
    if (this.dead) return; // ended here (terminate), or already lost
    const err = new EngineError(`the engine worker stopped while running: ${how}`, 'worker_lost', { retryable: true });
    this.worker.terminate();
    this.port.close();
    this.fail(err);
    this.onLost?.(err);
  }

  /** The worker is gone: every call in flight, and any later one, fails with `err`. */
  private fail(err: Error) {
    this.dead ??= err;
    this.starting?.(err);
    this.rpc.fail(err);
  }
}
