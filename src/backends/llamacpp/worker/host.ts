// The worker side: creates the Engine, and serves the page's calls on it (core/rpc/rpc.ts) from the port it was handed.
import type { BackendInfo, CallControl } from '../../../contract.ts';
import type { Engine } from '../engine.ts';
import { EngineError, toWire } from '../../../errors.ts';
import { type RpcMessage, RpcServer, type Result } from '../../../core/rpc/rpc.ts';
import { cspError, isWasmCspError, watchCsp } from '../../../core/csp.ts';
import type { HostApi, HostInit, StartStage } from './protocol.ts';

/** The end of a MessagePort this side uses. */
export interface PortLike {
  postMessage(message: unknown): void;
  onmessage: ((e: MessageEvent) => void) | null;
}

export class EngineHost implements HostApi {
  private engine: Engine | null = null;

  constructor(private readonly makeEngine: (init: HostInit, onStage?: (stage: StartStage) => void) => Engine) {}

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
