// One RPC layer for the engine's calls over a message channel: the page ↔ its engine worker (a MessagePort), and a
// tab ↔ the tab running the shared engine (a BroadcastChannel, shared/). A call has an id; the caller may abort it;
// its progress events and chunks travel as messages, chunks acknowledged under the one flow-control rule (flow.ts);
// its answer is a Result, so a typed error keeps its class, code and details across (errors.ts toWire/fromWire).
import type { CallControl, ServedCalls } from '../../contract.ts';
import { abortable } from '../abort.ts';
import { AbortError, fromWire, toWire, type WireError } from '../../errors.ts';
import type { ChatCompletionChunk, Progress } from '../../types.ts';
import { ChunkWindow } from './flow.ts';

export type Method = keyof ServedCalls;

// Every call: a Record over Method fails to compile when one is missing.
const methods: Record<Method, true> = {
  load: true,
  complete: true,
  embed: true,
  rank: true,
  countTokens: true,
  info: true,
  unload: true,
  cacheStats: true,
  cacheClear: true,
  cacheFlush: true,
  cacheExport: true,
  modelsFetch: true,
  modelsList: true,
  modelsDelete: true,
  modelsUsage: true,
};
export const METHODS = Object.keys(methods) as Method[];

export type Result<T> = { ok: true; value: T } | { ok: false; error: WireError };

export type CallMessage = {
  kind: 'call';
  id: number;
  method: Method;
  argument: unknown;
  progress: boolean;
  chunks: boolean;
};

export type RpcMessage =
  | CallMessage
  /** The server has the call (a caller may time the wait for it). */
  | { kind: 'accepted'; id: number }
  | { kind: 'abort'; id: number }
  /** The caller has taken a chunk in: the server may send one more. */
  | { kind: 'ack'; id: number }
  | { kind: 'progress'; id: number; value: Progress }
  | { kind: 'chunk'; id: number; value: ChatCompletionChunk }
  | { kind: 'result'; id: number; result: Result<unknown> };

interface Pending {
  control: CallControl;
  /** Acknowledgements, sent in order once the consumer has room. */
  acks: Promise<void>;
  accepted?: () => void;
  settle(result: { ok: true; value: unknown } | { ok: false; error: Error }): void;
}

/** The calling side. `send` posts a message; whatever arrives for it goes to receive(). */
export class RpcClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(private readonly send: (message: RpcMessage) => void) {}

  /** Calls in flight. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Sends a call and settles with its answer. `extra` is added to the call message (the shared engine's addressing);
   * `accepted` runs when the server says it has the call; `started` gets the call's id.
   */
  call(
    method: Method,
    argument: unknown,
    control: CallControl = {},
    hooks: { extra?: Record<string, unknown>; accepted?: () => void; started?: (id: number) => void } = {},
  ): Promise<unknown> {
    if (control.signal?.aborted) return Promise.reject(new AbortError());
    const id = this.nextId++;
    const answered = new Promise((resolve, reject) => {
      const settle: Pending['settle'] = (result) => {
        if (!this.pending.delete(id)) return;
        if (result.ok) resolve(result.value);
        else reject(result.error);
      };
      this.pending.set(id, { control, acks: Promise.resolve(), accepted: hooks.accepted, settle });
    });
    hooks.started?.(id);
    this.send({
      ...hooks.extra,
      kind: 'call',
      id,
      method,
      argument,
      progress: !!control.onProgress,
      chunks: !!control.onChunk,
    });
    return abortable(answered, control.signal, () => {
      this.pending.delete(id);
      this.send({ kind: 'abort', id });
    });
  }

  receive(message: RpcMessage): void {
    const p = this.pending.get(message.id);
    if (!p) return;
    switch (message.kind) {
      case 'accepted':
        p.accepted?.();
        break;
      case 'progress':
        p.control.onProgress?.(message.value);
        break;
      case 'chunk': {
        const room = p.control.onChunk?.(message.value);
        p.acks = p.acks
          .then(() => room)
          .then(
            () => this.send({ kind: 'ack', id: message.id }),
            () => {},
          );
        break;
      }
      case 'result': {
        const { result } = message;
        p.settle(result.ok ? result : { ok: false, error: fromWire(result.error) });
        break;
      }
    }
  }

  /** Ends one call (or all) with `error`: the server will not answer it. */
  fail(error: Error, id?: number): void {
    for (const [key, p] of [...this.pending]) if (id === undefined || key === id) p.settle({ ok: false, error });
  }
}

/** The serving side: runs each call it receives and sends back its progress, chunks and result. */
export class RpcServer {
  private readonly calls = new Map<number, { controller: AbortController; acks: Array<() => void> }>();

  constructor(
    private readonly send: (message: RpcMessage) => void,
    private readonly run: (call: CallMessage, control: CallControl) => Promise<unknown>,
  ) {}

  get size(): number {
    return this.calls.size;
  }

  receive(message: RpcMessage): void {
    switch (message.kind) {
      case 'call':
        void this.serve(message);
        break;
      case 'abort':
        this.calls.get(message.id)?.controller.abort();
        break;
      case 'ack':
        this.calls.get(message.id)?.acks.shift()?.();
        break;
    }
  }

  /** Stops every call (their callers are gone). */
  abortAll(): void {
    for (const call of this.calls.values()) call.controller.abort();
  }

  private async serve(call: CallMessage) {
    const { id } = call;
    if (this.calls.has(id)) return;
    const entry = { controller: new AbortController(), acks: [] as Array<() => void> };
    const { signal } = entry.controller;
    // A stopped call's decode may be waiting for an acknowledgement that will not come.
    signal.addEventListener('abort', () => entry.acks.splice(0).forEach((ack) => ack()));
    this.calls.set(id, entry);
    this.send({ kind: 'accepted', id });
    const chunks = call.chunks
      ? new ChunkWindow<ChatCompletionChunk>((value) => {
          if (signal.aborted) return;
          this.send({ kind: 'chunk', id, value });
          return new Promise<void>((resolve) => entry.acks.push(resolve));
        })
      : null;
    const control: CallControl = {
      signal,
      onProgress: call.progress ? (value) => this.send({ kind: 'progress', id, value }) : undefined,
      onChunk: chunks?.send,
    };
    let result: Result<unknown>;
    try {
      const value = await this.run(call, control);
      await chunks?.drain(); // the caller holds every chunk before the answer ends its stream
      result = { ok: true, value };
    } catch (err) {
      result = { ok: false, error: toWire(err) };
    }
    this.calls.delete(id);
    this.send({ kind: 'result', id, result });
  }
}

/** Stubs for every call, each going through `call` (to the engine's worker, or to the tab running the shared engine).
 */
export function rpcStubs<T extends Record<Method, unknown>>(
  call: (method: Method, argument: unknown, control: CallControl) => Promise<unknown>,
): T {
  return Object.fromEntries(
    METHODS.map((m) => [m, (argument: unknown, control?: CallControl) => call(m, argument, control ?? {})]),
  ) as unknown as T;
}
