// The page <-> worker protocol. Starting the engine goes over Comlink (init, with a callback for the start's
// stages); every engine call then goes over a MessagePort the page hands over at init, through the RPC layer
// (core/rpc/rpc.ts) that the shared tabs use too.
import type { Result } from '../../../core/rpc/rpc.ts';
import type { Assets } from '../../../core/assets.ts';
import type { BackendInfo } from '../../../contract.ts';
import type { BuildVariant, CacheOptions } from '../../../types.ts';

export interface HostInit {
  variant: BuildVariant;
  /** Why this build (engine.info().buildReason). */
  buildReason: string;
  threads: number;
  /** Absolute URL of each of the engine's files (the glue scripts, the wasm builds). */
  assets: Assets;
  maxModelBytes?: number;
  hfEndpoint?: string;
  cache?: CacheOptions;
  /** The GPU build under backend 'auto': a model the GPU cannot hold loads on the CPU (Engine's gpuFallback). */
  gpuFallback?: boolean;
  /** The GPU build: false computes in f32 even where the adapter has shader-f16 (EngineOptions.gpuShaderF16). */
  shaderF16?: boolean;
  /** The GPU build: false leaves the adapter's subgroup matrices unused (EngineOptions.gpuSubgroupMatrix). */
  subgroupMatrix?: boolean;
  /** A Web Lock the worker holds for its life: the page learns of its end when the browser grants the lock. Set per
   * worker by the page (client.ts). */
  lifeLock?: string;
}

/** Where the worker's start has got to: the glue script is loaded; the pthread workers exist and the wasm is asked for.
 */
export type StartStage = 'script' | 'instantiate';

export interface HostApi {
  /** Creates the engine and instantiates the wasm build; answers with what engine.info() reports. Calls come in on
   * `calls`, a MessagePort. */
  init(init: HostInit, calls: MessagePort, onStage?: (stage: StartStage) => void): Promise<Result<BackendInfo>>;
}
