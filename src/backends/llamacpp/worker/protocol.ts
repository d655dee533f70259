// The page <-> worker protocol, one RPC layer for every call (core/rpc/rpc.ts, the one the shared tabs use too): the
// page's only message on the worker itself is StartMessage, handing over the MessagePort every engine call then goes
// over; the worker answers on itself with its start's stages and the start's Result (StartReply).
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
  /** The GPU build under backend 'auto': a model the GPU cannot hold loads on the CPU (LlamaEngine's gpuFallback). */
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

/** The page's message that starts the engine: calls come in on `calls`, a MessagePort (transferred). */
export interface StartMessage {
  kind: 'start';
  init: HostInit;
  calls: MessagePort;
}

/** The worker's answers while it starts: each stage reached, then what engine.info() reports (or why it failed). */
export type StartReply = { kind: 'stage'; stage: StartStage } | { kind: 'started'; result: Result<BackendInfo> };
