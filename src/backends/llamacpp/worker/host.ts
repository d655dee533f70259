// The worker side: creates the LlamaEngine, and serves the page's calls on it (core/rpc/rpc.ts) from the port it was handed.
import type { BackendInfo, CallControl } from '../../../contract.ts';
import type { LlamaEngine } from '../llama-engine.ts';
import { EngineError, toWire } from '../../../errors.ts';
import { type RpcMessage, RpcServer, type Result } from '../../../core/rpc/rpc.ts';
import { cspError, isWasmCspError, watchCsp } from '../../../core/csp.ts';
import type { HostInit, StartMessage, StartReply, StartStage } from './protocol.ts';

/** The end of a MessagePort this side uses. */
export interface PortLike {
  postMessage(message: unknown): void;
  onmessage: ((e: MessageEvent) => void) | null;
}

export class WorkerHost {
  private engine: LlamaEngine | null = null;

  constructor(private readonly makeEngine: (init: HostInit, onStage?: (stage: StartStage) => void) => LlamaEngine) {}

  /** Creates the engine and instantiates the wasm build; answers with what engine.info() reports. Calls come in on
   * `calls`. */
  async init(init: HostInit, calls: PortLike, onStage?: (stage: StartStage) => void): Promise<Result<BackendInfo>> {
    const server = new RpcServer(
      (m) => calls.postMessage(m),
      ({ method, argument }, control) => {
        if (!this.engine) throw new EngineError('the engine worker was not initialised', 'not_initialised');
        const call = this.engine[method] as (a: unknown, c: CallControl) => Promise<unknown>;
        return call.call(this.engine, argument, control);
      },
    );
    calls.onmessage = (e: MessageEvent<RpcMessage>) => server.receive(e.data);
    // The policy sent with this worker's script governs it: a CSP on every response needs 'wasm-unsafe-eval'.
    const csp = watchCsp(globalThis);
    try {
      if (init.lifeLock) await holdForLife(init.lifeLock);
      this.engine ??= this.makeEngine(init, onStage);
      await this.engine.init();
      return { ok: true, value: await this.engine.info() };
    } catch (err) {
      const blocked = csp.seen.length || isWasmCspError(String((err as Error)?.message ?? err));
      return {
        ok: false,
        error: toWire(blocked ? cspError("compiling the engine's WebAssembly", csp.seen[0] ?? null) : err),
      };
    } finally {
      csp.stop();
    }
  }
}

/** A worker's global scope, as the start uses it. */
export interface StartScope {
  addEventListener(type: 'message', listener: (e: MessageEvent) => void): void;
  removeEventListener(type: 'message', listener: (e: MessageEvent) => void): void;
  postMessage(message: unknown): void;
}

/**
 * Serves the page's start on a worker's global scope (workers/engine.worker.ts): the first StartMessage starts the
 * engine, answered with StartReply messages; anything else posted to the worker is not the page's and is ignored.
 */
export function serveStart(scope: StartScope, host: WorkerHost) {
  const onMessage = (e: MessageEvent) => {
    const m = e.data as Partial<StartMessage> | null;
    if (m?.kind !== 'start' || typeof m.init !== 'object' || !m.calls) return;
    scope.removeEventListener('message', onMessage);
    const reply = (r: StartReply) => scope.postMessage(r);
    void host
      .init(m.init, m.calls, (stage) => reply({ kind: 'stage', stage }))
      .then((result) => reply({ kind: 'started', result }));
  };
  scope.addEventListener('message', onMessage);
}

/** Holds the lock `name` until this worker ends: the browser then releases it, and the page learns the worker is gone.
 * The start waits for the grant at most a second: requests for one name are granted in the order made, so the page's,
 * made after this start ends, comes after this one even if the grant is slow. */
function holdForLife(name: string): Promise<void> {
  return new Promise((held) => {
    void navigator.locks.request(name, () => {
      held();
      return new Promise<never>(() => {});
    });
    setTimeout(held, 1_000);
  });
}
