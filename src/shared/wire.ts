// The messages of a shared engine (EngineOptions.shared) on its BroadcastChannel. Every tab hears every message, so
// a call names the leader's term it is meant for and an answer the tab it is for; a call sent to a leader that has
// gone is never answered by the next one.
import type { LoadRequest } from '../api/engine-api.ts';
import { EngineError } from '../errors.ts';
import type { ChatCompletionChunk, Progress } from '../types.ts';
import type { Method, Result } from '../worker/protocol.ts';

/** The model a tab loaded: `key` is equal for tabs that asked for the same model with the same options. */
export interface TabModel {
  key: string;
  request: LoadRequest;
}

export type Wire =
  /** A tab joined and asks who leads. */
  | { kind: 'hello' }
  /** A tab took the lead (ready: false while its engine starts); calls to other terms will not be answered. */
  | { kind: 'leader'; term: string; ready: boolean }
  /** A tab leaves; `term` when it was the leader. */
  | { kind: 'bye'; tab: string; term?: string }
  | { kind: 'call'; term: string; tab: string; id: number; method: Method; argument: unknown; model: TabModel | null;
      progress: boolean; chunks: boolean }
  | { kind: 'abort'; term: string; tab: string; id: number }
  /** The tab has taken a chunk in: the leader may send more (back-pressure, as across the worker boundary). */
  | { kind: 'ack'; term: string; tab: string; id: number }
  | { kind: 'progress'; tab: string; id: number; value: Progress }
  | { kind: 'chunk'; tab: string; id: number; value: ChatCompletionChunk }
  | { kind: 'result'; tab: string; id: number; result: Result<unknown> };

export const lockNames = (name: string) => ({
  leader: `hearth-engine:${name}`,
  tab: (tab: string) => `hearth-engine:${name}:tab:${tab}`,
  tabPrefix: `hearth-engine:${name}:tab:`,
});

export function leaderGone(): EngineError {
  return new EngineError('the tab that ran the shared engine has closed; another tab is taking it over: send the request again',
    'leader_gone', { retryable: true });
}
