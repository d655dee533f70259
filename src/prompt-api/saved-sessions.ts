// Sessions kept across reloads: a session created with `hearth: { sessionId }` keeps its messages and options here
// (IndexedDB, one record per id), and its KV state is the engine's conversation of the same id (engine.cache), so a
// page that creates it again after a reload goes on where it was, without reading the conversation again. A record is
// checked before use: anything else under the key (another version, damage) is ignored, never trusted.
import { createStore, del, get, set, type UseStore } from 'idb-keyval';
import type { ChatMessage } from '../types.ts';

const VERSION = 1;

export interface SavedSession {
  v: typeof VERSION;
  messages: ChatMessage[];
  /** Each message's tokens as contextUsage counts them (sessions.ts contentTokens). */
  tokens: number[];
  samplingMode: string;
}

let db: UseStore | null = null;
const store = () => (db ??= createStore('hearth-prompt-api', 'sessions'));

export async function loadSession(id: string): Promise<SavedSession | null> {
  const s = (await get(id, store()).catch(() => null)) as SavedSession | null | undefined;
  const ok =
    s &&
    s.v === VERSION &&
    Array.isArray(s.messages) &&
    s.messages.every((m) => m && typeof m.role === 'string') &&
    Array.isArray(s.tokens) &&
    s.tokens.length === s.messages.length &&
    s.tokens.every((n) => Number.isInteger(n) && n >= 0) &&
    typeof s.samplingMode === 'string';
  return ok ? s : null;
}

export function saveSession(id: string, session: Omit<SavedSession, 'v'>): Promise<void> {
  return set(id, { v: VERSION, ...session }, store());
}

export function deleteSession(id: string): Promise<void> {
  return del(id, store());
}
