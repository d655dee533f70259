// The page <-> worker protocol (over Comlink). Every call returns a Result so typed errors keep their class, code
// and details across the boundary (Comlink alone would pass only message and name). AbortSignals cannot cross:
// each call carries a request id and the page forwards an abort as abort(id).
import type { WireError } from './errors.ts';
import type { BuildVariant } from './engine/llama/module.ts';
import type {
  CacheOptions, CacheStats, ChatCompletionChunk, ChatCompletionCreateParams, EngineInfo, LoadOptions, ModelInfo, ModelSource, Progress,
} from './types.ts';

export type Result<T> = { ok: true; value: T } | { ok: false; error: WireError };

export interface HostInit {
  variant: BuildVariant;
  threads: number;
  /** Absolute URL of the folder with hearth-*.js/.wasm. */
  assetsUrl: string;
  maxModelBytes?: number;
  cache?: CacheOptions;
}

export type WireLoadOptions = Omit<LoadOptions, 'signal' | 'onProgress'>;
export type WireParams = Omit<ChatCompletionCreateParams, 'signal' | 'onProgress'>;

/** Receives the chunks of a completion; its promise resolves when the page has room for more. */
export type ChunkReceiver = (chunk: ChatCompletionChunk) => Promise<void>;

export interface EngineHostApi {
  init(opts: HostInit): Promise<Result<EngineInfo>>;
  load(id: number, source: ModelSource, options: WireLoadOptions, onProgress?: (p: Progress) => void): Promise<Result<ModelInfo>>;
  complete(id: number, params: WireParams, receive: ChunkReceiver, onProgress?: (p: Progress) => void): Promise<Result<void>>;
  abort(id: number): void;
  info(): Promise<Result<EngineInfo>>;
  unload(): Promise<Result<void>>;
  cacheStats(): Promise<Result<CacheStats>>;
  cacheClear(conversationId?: string): Promise<Result<void>>;
  cacheFlush(): Promise<Result<void>>;
}
