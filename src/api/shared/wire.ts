// The messages of a shared engine (EngineOptions.shared) on its BroadcastChannel. Every tab hears every message, so
// a call names the leader's term it is meant for and every answer the tab and term it is for; a call sent to a
// leader that has gone is never answered by the next one.
//
// Nothing on the channel is trusted as it comes: any page of the origin can post there. The channel and lock names
// carry the protocol version and the build (tabs of another deploy form a group of their own), every message is
// checked for its shape and version, and a leader is believed only while it holds its term's Web Lock (a forged
// announcement from a page without it is ignored).
import type { LoadRequest } from '../../contract.ts';
import { BUILD_ID } from '../../core/build.ts';
import { EngineError } from '../../errors.ts';
import { METHODS, type RpcMessage } from '../../core/rpc/rpc.ts';

/** Bump when a message changes. */
export const PROTOCOL = 2;

/** The model a tab loaded: `key` is equal for tabs that asked for the same model with the same options. */
export interface TabModel {
  key: string;
  request: LoadRequest;
}

export type Message =
  /** A tab joined and asks who leads. */
  | { kind: 'hello' }
  /** A tab took the lead (ready: false while its engine starts); calls to other terms will not be answered. */
  | { kind: 'leader'; term: string; ready: boolean }
  /** A tab leaves; `term` when it was the leader. */
  | { kind: 'bye'; tab: string; term?: string }
  /** A call, or what answers it (rpc/rpc.ts), addressed: to the leader of `term`, for tab `tab`. A call carries the
   * model its tab loaded. */
  | Addressed;

export type Addressed = RpcMessage & { term: string; tab: string; model?: TabModel | null };

/** What travels: a message with the protocol version and build it was written by. */
export type Wire = Message & { v: number; build: string };

export const stamp = (message: Message): Wire => ({ ...message, v: PROTOCOL, build: BUILD_ID });

const str = (x: unknown) => typeof x === 'string' && x.length > 0 && x.length <= 200;
const id = (x: unknown) => Number.isSafeInteger(x) && (x as number) > 0;
const obj = (x: unknown) => !!x && typeof x === 'object';

/** The message, when it is one of this protocol and build, well-formed; else null (ignored). */
export function readWire(data: unknown): Message | null {
  const m = data as Wire & Record<string, unknown>;
  if (!obj(m) || m.v !== PROTOCOL || m.build !== BUILD_ID) return null;
  const addressed = str(m.term) && str(m.tab) && id(m.id);
  switch (m.kind) {
    case 'hello':
      return m;
    case 'leader':
      return str(m.term) && typeof m.ready === 'boolean' ? m : null;
    case 'bye':
      return str(m.tab) && (m.term === undefined || str(m.term)) ? m : null;
    case 'call':
      return addressed &&
        (METHODS as string[]).includes(m.method) &&
        typeof m.progress === 'boolean' &&
        typeof m.chunks === 'boolean' &&
        (m.model === null || (obj(m.model) && typeof m.model.key === 'string' && obj(m.model.request)))
        ? m
        : null;
    case 'accepted':
    case 'abort':
    case 'ack':
      return addressed ? m : null;
    case 'progress':
    case 'chunk':
      return addressed && obj(m.value) ? m : null;
    case 'result': {
      const r = m.result as { ok?: unknown; error?: { message?: unknown } };
      return addressed &&
        obj(r) &&
        typeof r.ok === 'boolean' &&
        (r.ok || (obj(r.error) && typeof r.error!.message === 'string'))
        ? m
        : null;
    }
    default:
      return null;
  }
}

/** Lock and channel names: the group's name, the protocol and the build. */
export const lockNames = (name: string) => {
  const base = `hearth-engine:${name}:v${PROTOCOL}:${BUILD_ID}`;
  return {
    leader: base,
    channel: base,
    tab: (tab: string) => `${base}:tab:${tab}`,
    tabPrefix: `${base}:tab:`,
    /** Held by the leader of a term for as long as it leads: what makes its announcement believable. */
    term: (term: string) => `${base}:term:${term}`,
  };
};

export function leaderGone(): EngineError {
  return new EngineError(
    'the tab that ran the shared engine has closed; another tab is taking it over: send the request again',
    'leader_gone',
    { retryable: true },
  );
}
