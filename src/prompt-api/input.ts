// The Prompt API's inputs as Hearth's chat messages: a string, or messages whose content is a string or typed parts
// (text, image, audio). Checked as the specification asks, before anything runs: a system message only first
// (TypeError), media only where the session said it expects them (NotSupportedError), audio bytes that are not audio
// (DataError). Images become PNG or the caller's own bytes, audio a WAV or the caller's bytes: the engine sniffs the
// format and refuses what it cannot read.
import type { ChatMessage, ContentPart } from '../types.ts';
import { wavFile } from '../core/wav.ts';

export type MessageType = 'text' | 'image' | 'audio';
export type Role = 'system' | 'user' | 'assistant';

export interface PromptMessage {
  role: Role;
  content: string | Array<{ type: string; value: unknown }>;
  prefix?: boolean;
}

/** What a session takes: the media its expectedInputs named (text always). */
export type Expected = ReadonlySet<MessageType>;

/**
 * The input as messages, in order. `first`: whether these open the session (only then may a system message come,
 * and only as the first); `prefix`: whether the last may be an assistant's text the reply goes on from (a prompt's,
 * not what append() or initialPrompts keep). Throws the specification's errors.
 */
export async function toMessages(
  input: unknown,
  expected: Expected,
  first: boolean,
  prefix = false,
): Promise<ChatMessage[]> {
  const messages = Array.isArray(input) ? (input as unknown[]) : [{ role: 'user', content: textOf(input) }];
  const out: ChatMessage[] = [];
  for (const [i, raw] of messages.entries()) {
    const m = raw as Partial<PromptMessage> | null;
    if (!m || typeof m !== 'object') throw new TypeError('a message is an object with a role and a content');
    if (m.role !== 'system' && m.role !== 'user' && m.role !== 'assistant') {
      throw new TypeError(`a message's role is 'system', 'user' or 'assistant', not ${JSON.stringify(m.role)}`);
    }
    if (m.role === 'system' && !(first && i === 0)) {
      throw new TypeError('a system message may only be the first message of a session (its initialPrompts)');
    }
    if (m.prefix) {
      if (m.role !== 'assistant' || i !== messages.length - 1 || !prefix) {
        throw new DOMException(
          "a prefix is the last message of a prompt's input, an assistant's (the reply goes on from it)",
          'SyntaxError',
        );
      }
      out.push({ role: m.role, content: await contentOf(m.content, m.role, expected), prefix: true });
      continue;
    }
    out.push({ role: m.role, content: await contentOf(m.content, m.role, expected) });
  }
  return out;
}

/** The text a non-message value stands for, as the IDL converts it to a DOMString. */
function textOf(value: unknown): string {
  return String(value);
}

async function contentOf(content: unknown, role: Role, expected: Expected): Promise<ChatMessage['content']> {
  if (!Array.isArray(content)) return textOf(content);
  const parts: ContentPart[] = [];
  for (const raw of content as unknown[]) {
    const part = raw as { type?: unknown; value?: unknown } | null;
    if (!part || typeof part !== 'object') throw new TypeError('a content part is an object with a type and a value');
    if (part.type === 'text') {
      if (typeof part.value !== 'string') throw new DOMException('a text part holds a string', 'SyntaxError');
      parts.push({ type: 'text', text: part.value });
    } else if (part.type === 'image' || part.type === 'audio') {
      if (role !== 'user') throw new DOMException(`${role} messages hold text only`, 'NotSupportedError');
      if (!expected.has(part.type)) {
        throw new DOMException(
          `the session was not created with expectedInputs [{ type: '${part.type}' }]`,
          'NotSupportedError',
        );
      }
      parts.push(part.type === 'image' ? await imagePart(part.value) : await audioPart(part.value));
    } else if (part.type === 'tool-call' || part.type === 'tool-response') {
      throw new DOMException('tool calls are not supported yet', 'NotSupportedError');
    } else {
      throw new TypeError(`a content part's type is 'text', 'image' or 'audio', not ${JSON.stringify(part.type)}`);
    }
  }
  // Text alone stays a string: templates that render only string content (most text models) take it.
  return parts.every((p) => p.type === 'text') ? parts.map((p) => p.text).join('') : parts;
}

/** Bytes the caller gave as an ArrayBuffer or a view (copied: the caller may change them after the call). */
function bytesOf(value: unknown): Uint8Array | null {
  if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength).slice();
  return null;
}

async function imagePart(value: unknown): Promise<ContentPart> {
  const bytes = bytesOf(value);
  const blob =
    value instanceof Blob ? value : bytes ? new Blob([bytes as Uint8Array<ArrayBuffer>]) : await drawn(value);
  return { type: 'image_url', image_url: { url: blob } };
}

/** An ImageBitmapSource (a bitmap, canvas, ImageData, image or video element, VideoFrame) as a PNG. */
async function drawn(value: unknown): Promise<Blob> {
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(value as ImageBitmapSource);
  } catch (err) {
    // The specification's error for a source that holds no image (an image not decoded, a closed frame).
    throw new DOMException(`the image could not be read: ${(err as Error).message}`, 'InvalidStateError');
  }
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  canvas.getContext('2d')!.drawImage(bitmap, 0, 0);
  bitmap.close();
  return canvas.convertToBlob({ type: 'image/png' });
}

async function audioPart(value: unknown): Promise<ContentPart> {
  if (typeof AudioBuffer !== 'undefined' && value instanceof AudioBuffer) {
    return { type: 'input_audio', input_audio: { data: wavFile(value), format: 'wav' } };
  }
  const bytes = bytesOf(value);
  const blob = value instanceof Blob ? value : bytes ? new Blob([bytes as Uint8Array<ArrayBuffer>]) : null;
  if (!blob) throw new TypeError('an audio value is a Blob, an AudioBuffer or bytes (ArrayBuffer, a typed array)');
  const format = audioFormat(new Uint8Array(await blob.slice(0, 12).arrayBuffer()));
  if (!format) throw new DOMException('the audio is not WAV, MP3 or FLAC', 'DataError');
  return { type: 'input_audio', input_audio: { data: blob, format } };
}

/** The container the engine decodes, from the file's first bytes; null for anything else. */
function audioFormat(head: Uint8Array): 'wav' | 'mp3' | 'flac' | null {
  const ascii = String.fromCharCode(...head);
  if (ascii.startsWith('RIFF') && ascii.slice(8, 12) === 'WAVE') return 'wav';
  if (ascii.startsWith('fLaC')) return 'flac';
  if (ascii.startsWith('ID3') || (head[0] === 0xff && ((head[1] ?? 0) & 0xe0) === 0xe0)) return 'mp3';
  return null;
}
