// The page side: createEngine() starts the engine worker and returns a HearthClient, the public API (EngineApi)
// over a core whose every call runs in the worker.
import * as Comlink from 'comlink';
import { EngineApi } from '../../../api/engine-api.ts';
import type { EngineCore, LocalEngine } from '../../../contract.ts';
import { DEFAULT_MAX_MODEL_BYTES } from '../limits.ts';
import { EngineError, fromWire, InvalidRequestError } from '../../../errors.ts';
import { joinShared } from '../../../api/shared/tab.ts';
import { scriptUrl, TRUSTED_TYPES_HINT } from '../../../core/trusted-types.ts';
import type { EngineOptions, HearthEngine, LoadOptions, ModelInfo, ModelSource } from '../../../types.ts';
import { cspError, watchCsp } from '../../../core/csp.ts';
import { selectBackends } from '../../../api/select.ts';
import { checkRemote } from '../../server/options.ts';
import { assetsIn, defaultAssets } from '../../../core/assets.ts';
import { chooseBuild } from './simd.ts';
import { remoteCore, RpcClient, type RpcMessage } from '../../../core/rpc/rpc.ts';
import type { HostApi, HostInit, StartStage } from './protocol.ts';
import { isRemoteSource } from '../../../core/models/remote.ts';

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

export interface HearthClient extends HearthEngine {
  /** Stops the worker at once; the engine cannot be used afterwards. A shared engine: this tab leaves it, and if
   * this tab ran it, another tab takes it over. */
  terminate(): void;
}

export async function createEngine(options: EngineOptions = {}): Promise<HearthClient> {
  const start = starter(options);
  const { shared } = options;
  if (shared === undefined || shared === false) return new Client(await start());
  if (shared !== true && (typeof shared !== 'string' || !shared)) {
    throw new InvalidRequestError(`shared must be true or a non-empty name, got ${JSON.stringify(shared)}`, 'invalid_parameter');
  }
  return new Client(await joinShared(shared === true ? 'default' : shared, start));
}

/** Checks the options and returns what starts this tab's own engine: its worker, and the backends over it (select.ts). */
function starter(options: EngineOptions): () => Promise<LocalEngine> {
  const asked = options.backend ?? 'auto';
  const backend = typeof asked === 'object' && asked ? { remote: checkRemote(asked.remote, 'backend') } : asked;
  if (backend !== 'auto' && backend !== 'wasm' && backend !== 'webgpu' && typeof backend !== 'object') {
    throw new InvalidRequestError(`backend must be "auto", "wasm", "webgpu" or { remote: { baseURL, model } }, got ${JSON.stringify(backend)}`, 'invalid_parameter');
  }
  const fallback = options.fallback ? checkRemote(options.fallback.remote, 'fallback') : null;
  // Threads need SharedArrayBuffer, which browsers give only to cross-origin isolated pages (COOP + COEP headers).
  const isolated = globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer !== 'undefined';
  let threads = Math.max(1, Math.min(16, Math.floor(options.threads ?? defaultThreads())));
  if (!isolated && threads > 1) {
    if (options.threads !== undefined) {
      console.warn('[hearth] this page is not cross-origin isolated (COOP/COEP headers), so llama.cpp runs on 1 thread');
    }
    threads = 1;
  }
  const simd = options.simd ?? 'auto';
  if (simd !== 'auto' && simd !== 'plain') {
    throw new InvalidRequestError(`simd must be "auto" or "plain", got ${JSON.stringify(simd)}`, 'invalid_parameter');
  }
  const base = typeof document !== 'undefined' ? document.baseURI : globalThis.location.href;
  const assets = options.assetsUrl !== undefined ? assetsIn(options.assetsUrl, base) : defaultAssets(base);
  // One thread needs no pthreads: the single-thread build avoids their shared-memory overhead.
  const threadsWhy = threads > 1 ? `${threads} threads` : isolated ? '1 thread' : '1 thread (the page is not cross-origin isolated)';
  const { variant, reason } = chooseBuild(threads > 1, simd, threadsWhy);
  const init: HostInit = {
    variant, buildReason: reason, threads, assets, maxModelBytes: options.maxModelBytes, hfEndpoint: options.hfEndpoint, cache: options.cache,
  };
  const start = async (): Promise<LocalEngine> => {
    const remote = new RemoteEngine(startWorker(assets['engine.worker.js']));
    await remote.start(init);
    const core = await selectBackends(remote.core, {
      requested: backend, fallback, wasmUrl: assets['wllama.wasm'], threads, maxModelBytes: options.maxModelBytes ?? DEFAULT_MAX_MODEL_BYTES,
    });
    return {
      core,
      terminate: () => {
        remote.terminate();
        // A WebGPU backend's own worker (wllama), a server's requests in flight.
        if (backend !== 'wasm' || fallback) void core.unload().catch(() => {});
      },
    };
  };
  return async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await start();
      } catch (err) {
        if (!(err instanceof EngineError && err.code === 'worker_stalled') || attempt === MAX_STARTS) throw err;
        console.warn('[hearth] the engine worker stalled while starting; starting a new one');
      }
    }
  };
}

/** The engine worker; a page policy that forbids it is a typed error that names what to change. */
function startWorker(url: string): Worker {
  const csp = watchCsp();
  try {
    return new Worker(scriptUrl(url));
  } catch (err) {
    if ((err as Error).name === 'SecurityError') throw cspError('the engine worker', csp.seen[0] ?? { directive: 'worker-src', blockedURI: url });
    if (err instanceof TypeError && /Trusted/i.test(err.message)) throw new EngineError(`the engine worker could not start: ${TRUSTED_TYPES_HINT}`, 'trusted_types_blocked');
    throw err;
  } finally {
    csp.stop();
  }
}

class Client extends EngineApi implements HearthClient {
  private persisting: Promise<unknown> | null = null;

  constructor(private readonly engine: LocalEngine) {
    super(engine.core);
  }

  override async load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    // A downloaded model is kept in OPFS: ask the browser not to evict it under storage pressure (only a page may
    // ask; engine.models.usage().persisted tells the answer). Never waited for: Chromium decides at once, but Firefox
    // asks the user, and the load must not wait on a prompt they may never answer.
    const stored = isRemoteSource(source) && options.store !== false;
    if (stored && typeof navigator !== 'undefined' && navigator.storage?.persist) {
      this.persisting ??= navigator.storage.persisted().then((yes) => yes || navigator.storage.persist()).catch(() => false);
    }
    return super.load(source, options);
  }

  terminate(): void {
    this.engine.terminate();
  }
}

/** The engine in the worker, seen as an EngineCore: its calls go over a MessagePort through the RPC layer. */
class RemoteEngine {
  readonly core: EngineCore;
  private readonly remote: Comlink.Remote<HostApi>;
  private readonly port: MessagePort;
  /** The worker's end of the port, handed over at start. */
  private hostPort: MessagePort | null;
  private readonly rpc: RpcClient;
  private dead: Error | null = null;
  /** The start's own wait, ended by a dying worker too. */
  private starting: ((err: Error) => void) | null = null;

  constructor(private readonly worker: Worker) {
    this.remote = Comlink.wrap<HostApi>(worker);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.rpc = new RpcClient((m) => port1.postMessage(m));
    port1.onmessage = (e: MessageEvent<RpcMessage>) => this.rpc.receive(e.data);
    this.core = remoteCore((method, argument, control) =>
      this.dead ? Promise.reject(this.dead) : this.rpc.call(method, argument, control));
    this.hostPort = port2;
    worker.addEventListener('error', (e) => {
      this.fail(new EngineError(`the engine worker failed: ${e.message || 'it could not be started (is engine.worker.js served?)'}`, 'worker_failed'));
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
      watchdog = setTimeout(() => this.terminate(new EngineError(
        `the engine worker stalled for ${STALL_MS / 1000} s while creating its threads (reload the page to try again)`,
        'worker_stalled')), STALL_MS);
    };
    const csp = watchCsp();
    const deadline = setTimeout(() => this.terminate(csp.seen.length ? cspError('the engine', csp.seen[0]!) : new EngineError(
      `the engine did not start within ${START_TIMEOUT_MS / 1000} s: its files (${init.assets['engine.worker.js'].replace(/[^/]*$/, '')}) did not load. ` +
      'Check the connection and that they are served.', 'start_timeout')), START_TIMEOUT_MS);
    try {
      if (this.dead) throw this.dead;
      const port = this.hostPort!;
      this.hostPort = null;
      const died = new Promise<never>((_, reject) => (this.starting = reject));
      const result = await Promise.race([this.remote.init(init, Comlink.transfer(port, [port]), Comlink.proxy(onStage)), died]);
      if (!result.ok) throw fromWire(result.error);
    } catch (err) {
      // A worker the page's policy refused fails as 'worker_failed'; the violation says why (it may come a moment later).
      if (err instanceof EngineError && err.code === 'worker_failed') await new Promise((resolve) => setTimeout(resolve, 50));
      if (csp.seen.length && !(err instanceof EngineError && err.code === 'csp_blocked')) throw cspError('the engine worker', csp.seen[0]!);
      throw err;
    } finally {
      this.starting = null;
      clearTimeout(watchdog);
      clearTimeout(deadline);
      csp.stop();
    }
  }

  terminate(reason = new EngineError('the engine was terminated', 'terminated')): void {
    this.worker.terminate();
    this.port.close();
    this.fail(reason);
  }

  /** The worker is gone: every call in flight, and any later one, fails with `err`. */
  private fail(err: Error) {
    this.dead ??= err;
    this.starting?.(err);
    this.rpc.fail(err);
  }
}
