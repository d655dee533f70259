// One conversation of a chat UI (the app, the widget): its messages kept in IndexedDB under the page's origin, and
// sending a message with a streamed reply. Its id is also the engine's conversation_id, so the KV state Hearth
// saved for it is found again after a reload. Nothing the user wrote is lost: a failed request gives the text back.
import { createStore, del, get, set, values } from 'idb-keyval';
import type { ChatCompletionChunk, ChatCompletionCreateParams, ChatMessage, Progress, Timings } from '../types.ts';

export interface SavedConversation {
  id: string;
  title: string;
  messages: ChatMessage[];
  updatedAt: number;
}

/** What a chat UI needs of an engine: a streamed chat completion (a HearthClient, or any OpenAI-shaped client). */
export interface StreamingChat {
  chat: { completions: { create(params: ChatCompletionCreateParams & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>> } };
}

export interface SendOptions {
  system?: string;
  signal?: AbortSignal;
  onText?: (answer: string) => void;
  onTimings?: (t: Timings) => void;
  onProgress?: (p: Progress) => void;
  /** Passed through to the request (temperature, context_overflow, …). */
  params?: Partial<ChatCompletionCreateParams>;
}

/** The widget keeps its conversations under ids with this prefix, so an app on the same site can leave them out. */
export const WIDGET_ID_PREFIX = 'widget:';

const db = () => (store ??= createStore('hearth-chat', 'conversations'));
let store: ReturnType<typeof createStore> | undefined;

export const conversations = {
  get: (id: string) => get<SavedConversation>(id, db()),
  put: (c: SavedConversation) => set(c.id, c, db()),
  delete: (id: string) => del(id, db()),
  async list(): Promise<SavedConversation[]> {
    return (await values<SavedConversation>(db())).sort((a, b) => b.updatedAt - a.updatedAt);
  },
};

export function newConversation(id: string = newId()): SavedConversation {
  return { id, title: '', messages: [], updatedAt: Date.now() };
}

export function newId(): string {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

export function messageText(m: ChatMessage): string {
  if (typeof m.content === 'string') return m.content;
  return (m.content ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');
}

/**
 * Adds `text` as the user's message and streams the reply into the conversation, saving it as it ends. A stopped
 * reply keeps what was said (and `stopped` is true); a failed one takes the user's message back out and throws.
 */
export async function send(c: SavedConversation, engine: StreamingChat, text: string, opts: SendOptions = {}): Promise<{ answer: string; stopped: boolean }> {
  c.messages.push({ role: 'user', content: text });
  if (!c.title) c.title = text.trim().split('\n')[0]!.slice(0, 60);
  let answer = '';
  let stopped = false;
  try {
    const messages: ChatMessage[] = opts.system ? [{ role: 'system', content: opts.system }, ...c.messages] : c.messages;
    const stream = await engine.chat.completions.create({
      ...opts.params, messages, stream: true, signal: opts.signal, conversation_id: c.id, onProgress: opts.onProgress,
    });
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.content ?? '';
      if (piece) opts.onText?.((answer += piece));
      if (chunk.timings) opts.onTimings?.(chunk.timings);
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') {
      c.messages.pop();
      await save(c);
      throw err;
    }
    stopped = true;
  }
  c.messages.push({ role: 'assistant', content: answer });
  await save(c);
  return { answer, stopped };
}

async function save(c: SavedConversation) {
  c.updatedAt = Date.now();
  try {
    await conversations.put(JSON.parse(JSON.stringify(c)) as SavedConversation);
  } catch {
    // storage full or disabled: the chat goes on, it is just not kept
  }
}
