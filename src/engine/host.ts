// The worker side of the protocol: wraps an Engine, maps request ids to AbortControllers and errors to Results.
import { EngineError, toWire } from '../errors.ts';
import type { ChunkReceiver, EngineHostApi, HostInit, Result, WireLoadOptions, WireParams } from '../protocol.ts';
import type { CacheStats, EngineInfo, ModelInfo, ModelSource, Progress } from '../types.ts';
import type { Engine } from './engine.ts';

// Chunks sent to the page before waiting for its acknowledgement: enough to hide the message round trip, few
// enough that a page that stops reading soon stops the decoding too.
const IN_FLIGHT = 8;

async function result<T>(fn: () => Promise<T>): Promise<Result<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    return { ok: false, error: toWire(err) };
  }
}

export class EngineHost implements EngineHostApi {
  private engine: Engine | null = null;
  private controllers = new Map<number, AbortController>();

  constructor(private readonly makeEngine: (opts: HostInit) => Engine) {}

  private get ready(): Engine {
    if (!this.engine) throw new EngineError('the engine worker was not initialised', 'not_initialised');
    return this.engine;
  }

  init(opts: HostInit): Promise<Result<EngineInfo>> {
    return result(async () => {
      this.engine ??= this.makeEngine(opts);
      await this.engine.init();
      return this.engine.info();
    });
  }

  load(id: number, source: ModelSource, options: WireLoadOptions, onProgress?: (p: Progress) => void): Promise<Result<ModelInfo>> {
    return this.withSignal(id, (signal) => this.ready.load(source, { ...options, signal, onProgress }));
  }

  complete(id: number, params: WireParams, receive: ChunkReceiver, onProgress?: (p: Progress) => void): Promise<Result<void>> {
    return this.withSignal(id, async (signal) => {
      const inFlight: Promise<void>[] = [];
      await this.ready.complete({ ...params, onProgress }, async (chunk) => {
        inFlight.push(receive(chunk));
        if (inFlight.length >= IN_FLIGHT) await inFlight.shift();
      }, signal);
      await Promise.all(inFlight);
    });
  }

  abort(id: number): void {
    this.controllers.get(id)?.abort();
  }

  info(): Promise<Result<EngineInfo>> {
    return result(() => this.ready.info());
  }

  unload(): Promise<Result<void>> {
    return result(() => this.ready.unload());
  }

  cacheStats(): Promise<Result<CacheStats>> {
    return result(() => this.ready.cache.stats());
  }

  cacheClear(conversationId?: string): Promise<Result<void>> {
    return result(() => this.ready.cache.clear({ conversation_id: conversationId }));
  }

  cacheFlush(): Promise<Result<void>> {
    return result(() => this.ready.cache.flush());
  }

  private async withSignal<T>(id: number, fn: (signal: AbortSignal) => Promise<T>): Promise<Result<T>> {
    const controller = new AbortController();
    this.controllers.set(id, controller);
    try {
      return await result(() => fn(controller.signal));
    } finally {
      this.controllers.delete(id);
    }
  }
}
