// One conversation of a chat UI (the app, the widget): its messages kept in IndexedDB under the page's origin, and
// sending a message with a streamed reply. Its id is also the engine's conversation_id, so the KV state Hearth
// saved for it is found again after a reload. Nothing the user wrote is lost: a failed request gives the text back.
//
// Several tabs may show one conversation. A send holds the conversation's Web Lock from reading the stored record to
// saving the reply, and starts from what is stored (other tabs' turns included), so turns from two tabs interleave
// and none overwrites another; the tabs hear of each change on a BroadcastChannel.
//
// A user message may hold images and audio clips: OpenAI content parts whose url/data is the file itself (a Blob),
// stored as it is in IndexedDB. Sent again next turn, the same bytes let the engine reuse their cached encoding.
import { del, entries, get, set, type UseStore } from 'idb-keyval';
import { yieldingStore } from '../core/idb-store.ts';
import { hashText } from '../core/hash.ts';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatMessage,
  ContentPart,
  Progress,
  Timings,
} from '../types.ts';
import { contentText } from '../core/chat/messages.ts';

export interface SavedConversation {
  id: string;
  title: string;
  /** What was said, all of it: the chat shows every message. */
  messages: ChatMessage[];
  /** The first message the model still reads (history policy, fitHistory); earlier ones are only shown. */
  start: number;
  /** Tokens the model counted for the system prompt and messages[start, end) (usage.total_tokens of the last answer,
   * or a ContextFullError's count); null when unknown. */
  tokens: { count: number; end: number } | null;
  updatedAt: number;
}

/** An image or audio clip sent with a message: the file, and for audio its format (ui/attachments.ts sniffs both). */
export interface Attachment {
  kind: 'image' | 'audio';
  blob: Blob;
  format?: AudioFormat;
}
export type AudioFormat = 'wav' | 'mp3' | 'flac';
/** What the user sends: text, and the files attached to it. */
export interface Draft {
  text: string;
  attachments?: Attachment[];
}

/** What a chat UI needs of an engine: a streamed chat completion (a HearthEngine, or any OpenAI-shaped client). */
export interface StreamingChat {
  chat: {
    completions: {
      create(params: ChatCompletionCreateParams & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
    };
  };
}

export interface SendOptions {
  system?: string;
  signal?: AbortSignal;
  onText?: (answer: string) => void;
  onTimings?: (t: Timings) => void;
  onProgress?: (p: Progress) => void;
  /** Keep what the model reads within its context: see fitHistory. */
  fit?: HistoryFit;
  /** Passed through to the request (temperature, context_overflow, …). */
  params?: Partial<ChatCompletionCreateParams>;
}

/** The history policy's numbers: the context the model has (null: unknown, learnt from a ContextFullError) and the
 * reply's budget, sent as max_tokens. */
export interface HistoryFit {
  contextTokens: number | null;
  maxTokens: number;
}

/** The widget keeps its conversations under ids with this prefix, so an app on the same site can leave them out. */
export const WIDGET_ID_PREFIX = 'widget:';

/** A widget's conversation: one per storage key, model and system prompt, so two widgets of a site share one only when
 * they are the same chat (then a visitor's conversation follows them from page to page). */
export function widgetConversationId(storageKey: string, model: string, system: string): string {
  return `${WIDGET_ID_PREFIX}${storageKey}:${hashText(`${model}\n${system}`)}`;
}

const db = () => (store ??= yieldingStore('hearth-chat', 'conversations'));
let store: UseStore | undefined;
const ROLES = new Set(['system', 'user', 'assistant']);

/** A stored content part is what this code writes: text, or media whose file is a Blob. */
const validPart = (p: ContentPart) =>
  p?.type === 'text'
    ? typeof p.text === 'string'
    : p?.type === 'image_url'
      ? p.image_url?.url instanceof Blob
      : p?.type === 'input_audio' &&
        p.input_audio?.data instanceof Blob &&
        ['wav', 'mp3', 'flac'].includes(p.input_audio.format);

/** A stored message's content: text, or (a user's) parts; undefined when it is not what this code writes. */
const validContent = (m: ChatMessage) =>
  typeof m.content === 'string' || (m.role === 'user' && Array.isArray(m.content) && m.content.every(validPart))
    ? m.content
    : undefined;

/** A stored record as a conversation, or null when any part of it is not what this code writes. */
export function validConversation(value: unknown, id?: string): SavedConversation | null {
  const c = value as Partial<SavedConversation> | null;
  if (!c || typeof c !== 'object' || typeof c.id !== 'string' || (id !== undefined && c.id !== id)) return null;
  if (typeof c.title !== 'string' || !Array.isArray(c.messages) || !Number.isFinite(c.updatedAt)) return null;
  const messages = c.messages.map((m) =>
    m && typeof m === 'object' && ROLES.has(m.role) ? { role: m.role, content: validContent(m) } : {},
  );
  if (!messages.every((m) => m.content !== undefined)) return null;
  // Records written before the history policy have neither field.
  const start = c.start ?? 0;
  const tokens = c.tokens ?? null;
  if (!Number.isInteger(start) || start < 0 || start > c.messages.length) return null;
  if (
    tokens !== null &&
    !(
      typeof tokens === 'object' &&
      Number.isInteger(tokens.count) &&
      tokens.count >= 0 &&
      Number.isInteger(tokens.end) &&
      tokens.end >= start &&
      tokens.end <= c.messages.length
    )
  ) {
    return null;
  }
  return { id: c.id, title: c.title, messages: messages as ChatMessage[], start, tokens, updatedAt: c.updatedAt! };
}

/** Drops a record that failed validation: it is not this code's, and keeping it would fail every later read. */
function dropBad(key: IDBValidKey) {
  console.warn(`[hearth] dropped a stored conversation that is not valid (${String(key)})`);
  void del(key, db()).catch(() => {});
}

export const conversations = {
  async get(id: string): Promise<SavedConversation | undefined> {
    const raw = await get<unknown>(id, db());
    if (raw === undefined) return undefined;
    const c = validConversation(raw, id);
    if (!c) dropBad(id);
    return c ?? undefined;
  },
  put: (c: SavedConversation) => set(c.id, c, db()),
  async delete(id: string) {
    await del(id, db());
    changed(id);
  },
  async list(): Promise<SavedConversation[]> {
    const all = (await entries<IDBValidKey, unknown>(db())).map(
      ([key, raw]) => [key, validConversation(raw, key as string)] as const,
    );
    for (const [key, c] of all) if (!c) dropBad(key);
    return all.flatMap(([, c]) => (c ? [c] : [])).sort((a, b) => b.updatedAt - a.updatedAt);
  },
};

export function newConversation(id: string = newId()): SavedConversation {
  return { id, title: '', messages: [], start: 0, tokens: null, updatedAt: Date.now() };
}

function newId(): string {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

/** A message's text (its images and clips are drawn apart). */
export function messageText(m: ChatMessage): string {
  return contentText(Array.isArray(m.content) ? m.content.filter((p) => p.type === 'text') : m.content);
}

/** A user message's content: the text alone (as before media), or the media then the text as parts. */
function userContent({ text, attachments = [] }: Draft): ChatMessage['content'] {
  if (!attachments.length) return text;
  const parts: ContentPart[] = attachments.map((a) =>
    a.kind === 'image'
      ? { type: 'image_url', image_url: { url: a.blob } }
      : { type: 'input_audio', input_audio: { data: a.blob, format: a.format ?? 'wav' } },
  );
  return text.trim() ? [...parts, { type: 'text', text }] : parts;
}

/** Tells the page when another tab changed a stored conversation (the widget shows the new turns). */
export function onConversationChange(listener: (id: string) => void): () => void {
  if (typeof BroadcastChannel === 'undefined') return () => {};
  const channel = new BroadcastChannel(CHANNEL);
  channel.onmessage = (e: MessageEvent<unknown>) => {
    if (typeof e.data === 'string') listener(e.data);
  };
  return () => channel.close();
}

const CHANNEL = 'hearth-chat:conversations';
function changed(id: string) {
  if (typeof BroadcastChannel === 'undefined') return;
  const channel = new BroadcastChannel(CHANNEL);
  channel.postMessage(id);
  channel.close();
}

/** Runs `fn` holding the conversation's lock (across tabs where Web Locks exist). */
function locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
  const locks = globalThis.navigator?.locks;
  return locks ? locks.request(`hearth-chat:${id}`, fn) : fn();
}

/**
 * Adds the user's message (text, or a Draft: text and attachments) and streams the reply into the conversation,
 * saving it as it ends. `c` is brought up to date with what other tabs saved first. A stopped reply keeps what was
 * said (and `stopped` is true); a failed one takes the user's message back out and throws.
 */
export function send(
  c: SavedConversation,
  engine: StreamingChat,
  message: string | Draft,
  opts: SendOptions = {},
): Promise<{ answer: string; stopped: boolean }> {
  const draft = typeof message === 'string' ? { text: message } : message;
  const text = draft.text;
  return locked(c.id, async () => {
    // Another tab's turns, saved since this tab last saved or loaded it (this tab's own edits since are kept).
    const stored = await conversations.get(c.id).catch(() => undefined);
    if (stored && stored.updatedAt > c.updatedAt) Object.assign(c, stored);
    c.messages.push({ role: 'user', content: userContent(draft) });
    if (!c.title) c.title = text.trim().split('\n')[0]!.slice(0, 60);
    let answer = '';
    let stopped = false;
    try {
      const stream = await create(c, engine, opts);
      for await (const chunk of stream) {
        const piece = chunk.choices[0]?.delta.content ?? '';
        if (piece) opts.onText?.((answer += piece));
        if (chunk.timings) opts.onTimings?.(chunk.timings);
        if (chunk.usage) c.tokens = { count: chunk.usage.total_tokens, end: c.messages.length + 1 };
      }
    } catch (err) {
      c.tokens = null; // not counted to the end
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
  });
}

/** Starts the request; a history that does not fit the context is cut (fitHistory) and the request sent again. */
async function create(
  c: SavedConversation,
  engine: StreamingChat,
  opts: SendOptions,
): Promise<AsyncIterable<ChatCompletionChunk>> {
  const fit = opts.fit;
  if (fit?.contextTokens) fitHistory(c, opts.system, fit.contextTokens, fit.maxTokens);
  for (let attempt = 0; ; attempt++) {
    const sent = c.messages.slice(c.start);
    const messages: ChatMessage[] = opts.system ? [{ role: 'system', content: opts.system }, ...sent] : sent;
    try {
      return await engine.chat.completions.create({
        ...opts.params,
        ...(fit ? { max_tokens: fit.maxTokens } : {}),
        messages,
        stream: true,
        signal: opts.signal,
        conversation_id: c.id,
        onProgress: opts.onProgress,
        ...(fit ? { stream_options: { include_usage: true } } : {}),
      });
    } catch (err) {
      const details = (err as { name?: string; details?: { promptTokens?: number; nCtx?: number } }).details;
      const full = (err as Error).name === 'ContextFullError' && details?.promptTokens && details.nCtx;
      // Only what the cut can help: once the new message is all that is left, the error stands.
      if (!fit || !full || attempt === 2 || c.start >= c.messages.length - 1) throw err;
      c.tokens = { count: details.promptTokens!, end: c.messages.length };
      fitHistory(c, opts.system, details.nCtx!, fit.maxTokens, true);
    }
  }
}

/** Tokens a message costs beyond its text: the chat template's role markers. */
const PER_MESSAGE = 8;
/** What an image or a clip is counted as, in characters of text (projectors give some tens to hundreds of tokens). */
const PER_MEDIA = 512;

/**
 * The widget's history policy. When the history the model reads, with the new message and a reply of `maxTokens`,
 * may not fit `contextTokens`, the oldest messages stop being sent (they stay on screen) until what is sent takes at
 * most half of the room left for the prompt; the system prompt is always sent. Half, so that the cut is rare: between
 * cuts, every turn extends the same token prefix and the KV cache reuses it. Token counts come from the last answer's
 * usage (scaled by characters for the messages added or dropped since); `force` cuts now (a ContextFullError).
 */
export function fitHistory(
  c: SavedConversation,
  system: string | undefined,
  contextTokens: number,
  maxTokens: number,
  force = false,
) {
  const chars = (m: ChatMessage) =>
    messageText(m).length +
    PER_MEDIA * (Array.isArray(m.content) ? m.content.filter((p) => p.type !== 'text').length : 0);
  const counted = c.tokens;
  const countedChars =
    (system?.length ?? 0) + c.messages.slice(c.start, counted?.end).reduce((n, m) => n + chars(m), 0);
  // Without a count, 2 characters a token: more than most text takes, so the first cut comes early rather than late.
  const perChar = counted && countedChars > 0 ? counted.count / countedChars : 0.5;
  const cost = (m: ChatMessage) => Math.ceil(chars(m) * perChar) + PER_MESSAGE;
  let estimate =
    Math.ceil((system?.length ?? 0) * perChar) + c.messages.slice(c.start).reduce((n, m) => n + cost(m), 0);
  const room = contextTokens - maxTokens;
  if (!force && estimate <= room) return;
  while (c.start < c.messages.length - 1 && estimate > room / 2) {
    estimate -= cost(c.messages[c.start]!);
    c.start++;
    // Never begin with an assistant message: the exchange goes as a whole.
    if (c.messages[c.start]?.role === 'assistant') estimate -= cost(c.messages[c.start++]!);
  }
  c.tokens = null;
}

async function save(c: SavedConversation) {
  c.updatedAt = Date.now();
  try {
    // A copy as it is now (the put runs later); Blobs are kept as they are, which a JSON copy would lose.
    await conversations.put(structuredClone(c));
    changed(c.id);
  } catch {
    // storage full or disabled: the chat goes on, it is just not kept
  }
}
