// createEngine: the page's engine. It checks the options, starts what they ask for — the llama.cpp engine's worker (on
// the GPU or the CPU) and the backends beside it (api/select.ts), or only a server — behind the router (api/router.ts), shares it between
// tabs when asked (api/shared/tab.ts), and returns the public API (HearthEngine) over it.
import type { CallTarget } from './contract.ts';
import { EngineApi } from './api/engine-api.ts';
import { BackendRouter } from './api/router.ts';
import { selectBackends, startWorker } from './api/select.ts';
import { engineCalls, NO_SERVICES } from './api/services.ts';
import { joinShared } from './api/shared/tab.ts';
import { workerInit } from './backends/llamacpp/worker/client.ts';
import { checkRemote } from './backends/server/remote-options.ts';
import { checkEngineOptions } from './core/options.ts';
import { DEFAULT_MAX_MODEL_BYTES } from './core/limits.ts';
import { isWebSource } from './core/models/web-source.ts';
import type {
  BackendName,
  EngineOptions,
  HearthEngine,
  LoadOptions,
  ModelInfo,
  ModelSource,
  RemoteOptions,
} from './types.ts';

export { defaultThreads } from './backends/llamacpp/worker/client.ts';

/** @deprecated HearthEngine, which has terminate() now: the name createEngine's result had before. */
export type HearthClient = HearthEngine;

export async function createEngine(options: EngineOptions = {}): Promise<HearthEngine> {
  const { backend, shared } = checkEngineOptions(options);
  let start: () => Promise<CallTarget>;
  if (typeof backend === 'object') {
    const server = checkRemote(backend.remote, 'backend');
    start = () => serverOnly(server);
  } else {
    start = starter(options, backend);
  }
  const engine = shared === null ? await start() : await joinShared(shared, start);
  // A page that talks to a server alone keeps no models here: it does not ask the browser to persist storage.
  return new PageEngine(engine, typeof backend !== 'object');
}

/** What starts this tab's own engine: the llama.cpp engine's worker, and the backends over it (api/select.ts). */
function starter(options: EngineOptions, backend: BackendName): () => Promise<CallTarget> {
  const fallback = options.fallback ? checkRemote(options.fallback.remote, 'fallback') : null;
  const init = {
    ...workerInit({
      threads: options.threads,
      simd: options.simd ?? 'auto',
      assetsUrl: options.assetsUrl,
      maxModelBytes: options.maxModelBytes,
      hfEndpoint: options.hfEndpoint,
      cache: options.cache,
    }),
    shaderF16: options.gpuShaderF16,
    subgroupMatrix: options.gpuSubgroupMatrix,
  };
  return async () => {
    const started = await startWorker(init, backend);
    const { worker } = started;
    const router = await selectBackends(started, {
      fallback,
      wasmUrl: init.assets['wllama.wasm'],
      threads: init.threads,
      maxModelBytes: options.maxModelBytes ?? DEFAULT_MAX_MODEL_BYTES,
      storage: worker.started?.storage ?? null,
    });
    return {
      calls: engineCalls(router, worker.calls),
      terminate: () => {
        worker.terminate();
        // wllama's own worker, a server's requests in flight.
        if (backend === 'wllama' || fallback) void router.unload().catch(() => {});
      },
    };
  };
}

/** A page that asked for a server alone: no worker, no model store, no KV state here. */
async function serverOnly(remote: RemoteOptions): Promise<CallTarget> {
  const { ServerBackend } = await import('./backends/server/server.ts');
  const router = new BackendRouter([new ServerBackend(remote)], {
    requested: 'remote',
    reason: 'a server was asked for (backend: { remote })',
    adapter: null,
    selfTest: null,
  });
  return { calls: engineCalls(router, NO_SERVICES), terminate: () => void router.unload().catch(() => {}) };
}

/** The page's engine: asks the browser to keep its downloads. */
class PageEngine extends EngineApi {
  private persisting: Promise<unknown> | null = null;

  /** `keepsModels`: the engine has a model store (a worker), for which the browser is asked to persist storage. */
  constructor(
    target: CallTarget,
    private readonly keepsModels: boolean,
  ) {
    super(target);
  }

  override async load(source: ModelSource, options: LoadOptions = {}): Promise<ModelInfo> {
    // A downloaded model is kept in OPFS: ask the browser not to evict it under storage pressure (only a page may
    // ask; engine.models.usage().persisted tells the answer). Never waited for: Chromium decides at once, but Firefox
    // asks the user, and the load must not wait on a prompt they may never answer.
    const stored = this.keepsModels && isWebSource(source) && options.store !== false;
    if (stored && typeof navigator !== 'undefined' && navigator.storage?.persist) {
      this.persisting ??= navigator.storage
        .persisted()
        .then((yes) => yes || navigator.storage.persist())
        .catch(() => false);
    }
    return super.load(source, options);
  }
}
