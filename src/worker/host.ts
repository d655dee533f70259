// The worker side of the protocol: runs the page's calls on an Engine, maps request ids to AbortControllers and
// errors to Results.
import type { CallControl } from '../api/engine-api.ts';
import type { Engine } from '../engine/engine.ts';
import { EngineError, toWire } from '../errors.ts';
import type { ChatCompletionChunk, EngineInfo } from '../types.ts';
import type { Argument, HostApi, HostInit, Method, Result, StartStage, Value } from './protocol.ts';

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

export class EngineHost implements HostApi {
  private engine: Engine | null = null;
  private controllers = new Map<number, AbortController>();

  constructor(private readonly makeEngine: (init: HostInit, onStage?: (stage: StartStage) => void) => Engine) {}

  init(init: HostInit, onStage?: (stage: StartStage) => void): Promise<Result<EngineInfo>> {
    return result(async () => {
      this.engine ??= this.makeEngine(init, onStage);
      await this.engine.init();
      return this.engine.info();
    });
  }

  async call<M extends Method>(id: number, method: M, argument: Argument<M>,
    onProgress?: CallControl['onProgress'], onChunk?: CallControl['onChunk']): Promise<Result<Value<M>>> {
    const controller = new AbortController();
    this.controllers.set(id, controller);
    const chunks = onChunk ? new ChunkWindow(onChunk) : null;
    try {
      return await result(async () => {
        if (!this.engine) throw new EngineError('the engine worker was not initialised', 'not_initialised');
        const call = this.engine[method] as (a: Argument<M>, c: CallControl) => Promise<Value<M>>;
        const value = await call.call(this.engine, argument, { signal: controller.signal, onProgress, onChunk: chunks?.send });
        await chunks?.drain(); // the page must hold every chunk before the call's answer ends its stream
        return value;
      });
    } finally {
      this.controllers.delete(id);
    }
  }

  abort(id: number): void {
    this.controllers.get(id)?.abort();
  }
}

/** Sends chunks to the page without waiting for each acknowledgement, but never more than IN_FLIGHT ahead. */
class ChunkWindow {
  private readonly inFlight: Array<Promise<void>> = [];

  constructor(private readonly receive: (chunk: ChatCompletionChunk) => void | Promise<void>) {}

  readonly send = async (chunk: ChatCompletionChunk) => {
    this.inFlight.push(Promise.resolve(this.receive(chunk)));
    if (this.inFlight.length >= IN_FLIGHT) await this.inFlight.shift();
  };

  async drain(): Promise<void> {
    await Promise.all(this.inFlight);
  }
}
