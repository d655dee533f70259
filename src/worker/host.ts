// The worker side of the protocol: runs the page's calls on an Engine, maps request ids to AbortControllers and
// errors to Results.
import type { CallControl } from '../contract.ts';
import type { Engine } from '../engine/engine.ts';
import { EngineError, toWire } from '../errors.ts';
import type { ChatCompletionChunk, EngineInfo, Progress } from '../types.ts';
import { cspError, isWasmCspError, watchCsp } from './csp.ts';
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
      // The policy sent with this worker's script governs it: a CSP on every response needs 'wasm-unsafe-eval'.
      const csp = watchCsp(globalThis);
      try {
        this.engine ??= this.makeEngine(init, onStage);
        await this.engine.init();
        return await this.engine.info();
      } catch (err) {
        if (csp.seen.length || isWasmCspError(String((err as Error)?.message ?? err))) {
          throw cspError('compiling the engine\'s WebAssembly', csp.seen[0] ?? null);
        }
        throw err;
      } finally {
        csp.stop();
      }
    });
  }

  async call<M extends Method>(id: number, method: M, argument: Argument<M>,
    onProgress?: CallControl['onProgress'], onChunk?: CallControl['onChunk']): Promise<Result<Value<M>>> {
    const controller = new AbortController();
    this.controllers.set(id, controller);
    const chunks = onChunk ? new ChunkWindow(onChunk) : null;
    // Progress travels on the callback's own port, the answer on Comlink's: without waiting, a last progress event can
    // reach the page after the answer (seen in Firefox: a loaded model shown as still loading). Calls on one port are
    // handled in order, so the last one's acknowledgement covers them all.
    let progressed: Promise<unknown> = Promise.resolve();
    const progress = onProgress && ((p: Progress) => void (progressed = Promise.resolve(onProgress(p)).catch(() => {})));
    try {
      return await result(async () => {
        if (!this.engine) throw new EngineError('the engine worker was not initialised', 'not_initialised');
        const call = this.engine[method] as (a: Argument<M>, c: CallControl) => Promise<Value<M>>;
        try {
          const value = await call.call(this.engine, argument, { signal: controller.signal, onProgress: progress, onChunk: chunks?.send });
          await chunks?.drain(); // the page must hold every chunk before the call's answer ends its stream
          return value;
        } finally {
          await progressed;
        }
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
