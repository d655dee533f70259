// Conversations out of the app and back in: every conversation as one JSON file (images and audio clips inside, as
// data: URLs), one conversation as Markdown to read or share. An imported file is hostile until checked: each
// conversation goes through the same validation as a stored record (ui/conversation.ts), media only as data: URLs of
// image and audio types, and nothing already here is overwritten — a conversation whose id is taken comes in under a
// new id unless it is the same conversation.
import { bytesToBase64, base64ToBytes } from '../core/bytes.ts';
import type { ChatMessage, ContentPart } from '../types.ts';
import { conversations, messageText, type SavedConversation, validConversation } from '../ui/conversation.ts';

export const EXPORT_FORMAT = 'hearth-conversations';
const EXPORT_VERSION = 1;
/** Larger files are refused before they are read: a conversation export with media stays far below. */
export const MAX_IMPORT_BYTES = 512 * 1024 ** 2;

/** All the app's conversations as a JSON Blob. */
export async function exportJson(list: SavedConversation[]): Promise<Blob> {
  const out = await Promise.all(
    list.map(async (c) => ({ ...c, messages: await Promise.all(c.messages.map(messageOut)) })),
  );
  const file = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: new Date().toISOString(),
    conversations: out,
  };
  return new Blob([JSON.stringify(file, null, 1)], { type: 'application/json' });
}

/** One conversation as Markdown: its title, then each message under who said it. */
export function exportMarkdown(c: SavedConversation): string {
  const who: Record<string, string> = { system: 'System', user: 'You', assistant: 'Assistant' };
  const parts = c.messages.map((m) => {
    const media = Array.isArray(m.content) ? m.content.filter((p) => p.type !== 'text') : [];
    const notes = media.map((p) => (p.type === 'image_url' ? '*[an image]*' : '*[an audio clip]*'));
    return `**${who[m.role] ?? m.role}:**\n\n${[...notes, messageText(m)].filter(Boolean).join('\n\n')}`;
  });
  return `# ${c.title || 'Conversation'}\n\n${parts.join('\n\n---\n\n')}\n`;
}

export interface ImportResult {
  added: number;
  /** Already here, the same: not added again. */
  same: number;
  /** Conversations of the file left out, each with why. */
  refused: string[];
}

/** Reads an export and adds its conversations. Throws an Error that says what is wrong when the file is not one. */
export async function importJson(file: Blob): Promise<ImportResult> {
  if (file.size > MAX_IMPORT_BYTES) throw new Error('this file is too large to be a conversation export');
  let data: { format?: unknown; version?: unknown; conversations?: unknown };
  try {
    data = JSON.parse(await file.text());
  } catch {
    throw new Error('this file is not JSON: choose a file exported by Hearth ("Export all")');
  }
  if (data?.format !== EXPORT_FORMAT || data.version !== EXPORT_VERSION || !Array.isArray(data.conversations)) {
    throw new Error('this JSON file is not a Hearth conversation export');
  }
  const result: ImportResult = { added: 0, same: 0, refused: [] };
  for (const [i, raw] of data.conversations.entries()) {
    const c = validConversation(await messagesIn(raw));
    if (!c) {
      result.refused.push(`conversation ${i + 1}: not a valid conversation`);
      continue;
    }
    const here = await conversations.get(c.id);
    if (here && (await sameConversation(here, c))) {
      result.same++;
      continue;
    }
    await conversations.put(here ? { ...c, id: crypto.randomUUID() } : c);
    result.added++;
  }
  return result;
}

async function messageOut(m: ChatMessage): Promise<ChatMessage> {
  if (!Array.isArray(m.content)) return m;
  const parts = await Promise.all(
    m.content.map(async (p): Promise<ContentPart> => {
      if (p.type === 'image_url' && p.image_url.url instanceof Blob) {
        return { type: 'image_url', image_url: { url: await dataUrl(p.image_url.url) } };
      }
      if (p.type === 'input_audio' && p.input_audio.data instanceof Blob) {
        return { type: 'input_audio', input_audio: { ...p.input_audio, data: await dataUrl(p.input_audio.data) } };
      }
      return p;
    }),
  );
  return { ...m, content: parts };
}

/** A record from a file with its media as Blobs again (only data: URLs of images and audio); validConversation
 * then checks the rest. */
async function messagesIn(raw: unknown): Promise<unknown> {
  const c = raw as { messages?: unknown } | null;
  if (!c || typeof c !== 'object' || !Array.isArray(c.messages)) return null;
  const messages = c.messages.map((m: { content?: unknown } | null) => {
    if (!m || typeof m !== 'object' || !Array.isArray(m.content)) return m;
    return {
      ...m,
      content: m.content.map((p: ContentPart) => {
        if (p?.type === 'image_url') return { ...p, image_url: { url: blobOf(p.image_url?.url, 'image/') } };
        if (p?.type === 'input_audio')
          return { ...p, input_audio: { ...p.input_audio, data: blobOf(p.input_audio?.data, 'audio/') } };
        return p;
      }),
    };
  });
  return { ...c, messages };
}

async function dataUrl(blob: Blob): Promise<string> {
  return `data:${blob.type || 'application/octet-stream'};base64,${bytesToBase64(new Uint8Array(await blob.arrayBuffer()))}`;
}

/** A data: URL of the given kind as a Blob; anything else (a URL to fetch, another type) as null, which fails
 * validation. */
function blobOf(url: unknown, kind: 'image/' | 'audio/'): Blob | null {
  const m = typeof url === 'string' ? /^data:([\w.+-]+\/[\w.+-]+);base64,([A-Za-z0-9+/=]*)$/.exec(url) : null;
  if (!m || !m[1]!.startsWith(kind)) return null;
  try {
    return new Blob([base64ToBytes(m[2]!)], { type: m[1] });
  } catch {
    return null;
  }
}

async function sameConversation(a: SavedConversation, b: SavedConversation): Promise<boolean> {
  const text = async (c: SavedConversation) => JSON.stringify(await Promise.all(c.messages.map(messageOut)));
  return a.title === b.title && (await text(a)) === (await text(b));
}
