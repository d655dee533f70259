// The page <-> worker protocol (over Comlink), derived from EngineCore (api/engine-api.ts): the page sends any core
// call as call(id, method, argument, callbacks) and gets a Result back, so typed errors keep their class, code and
// details across the boundary (Comlink alone would pass only message and name). An AbortSignal cannot cross: the
// page forwards an abort as abort(id). Callbacks cross as Comlink proxies, which must be top-level arguments.
import type { CallControl, EngineCore } from '../contract.ts';
import type { WireError } from '../errors.ts';
import type { BuildVariant, CacheOptions, EngineInfo } from '../types.ts';

export type Method = keyof EngineCore;
export type Argument<M extends Method> = Parameters<EngineCore[M]>[0];
export type Value<M extends Method> = Awaited<ReturnType<EngineCore[M]>>;

export type Result<T> = { ok: true; value: T } | { ok: false; error: WireError };

// Every core method, for the page's forwarding stubs: a Record over Method fails to compile when one is missing.
const methods: Record<Method, true> = {
  load: true, complete: true, embed: true, rank: true, info: true, unload: true, cacheStats: true, cacheClear: true, cacheFlush: true,
  modelsFetch: true, modelsList: true, modelsDelete: true, modelsUsage: true,
};
export const METHODS = Object.keys(methods) as Method[];

export interface HostInit {
  variant: BuildVariant;
  threads: number;
  /** Absolute URL of the folder with hearth-*.js/.wasm. */
  assetsUrl: string;
  maxModelBytes?: number;
  hfEndpoint?: string;
  cache?: CacheOptions;
}

/** Where the worker's start has got to: the glue script is loaded; the pthread workers exist and the wasm is asked for. */
export type StartStage = 'script' | 'instantiate';

export interface HostApi {
  /** Creates the engine and instantiates the wasm build; answers with what engine.info() reports. */
  init(init: HostInit, onStage?: (stage: StartStage) => void): Promise<Result<EngineInfo>>;
  call<M extends Method>(id: number, method: M, argument: Argument<M>,
    onProgress?: CallControl['onProgress'], onChunk?: CallControl['onChunk']): Promise<Result<Value<M>>>;
  abort(id: number): void;
}
