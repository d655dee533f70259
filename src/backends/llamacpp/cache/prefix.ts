// Token and message helpers shared by the cache's matching steps.
import { contentText } from '../../../core/chat/messages.ts';
import type { ChatMessage, Tool } from '../../../types.ts';
import { mediaName } from '../../../core/chat/media.ts';
import { hashText } from '../../../core/hash.ts';

/** Length of the longest common prefix of two token lists. */
export function commonPrefix(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Hash of a conversation's first messages (and the tools, which the template renders too). */
export function hashMessages(messages: ChatMessage[], tools: Tool[] | undefined): string {
  const norm = messages.map((m) => [
    m.role,
    content(m.content),
    m.name ?? null,
    m.tool_calls ?? null,
    m.tool_call_id ?? null,
  ]);
  return hashText(JSON.stringify([tools ?? null, norm]));
}

/** A message's text; with images or audio, its parts, the media by the hash the engine named them with. */
function content(c: ChatMessage['content']): unknown {
  if (!Array.isArray(c) || c.every((p) => p.type === 'text')) return contentText(c);
  return c.map((p) => (p.type === 'text' ? p.text : mediaName(p)));
}
