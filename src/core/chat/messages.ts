import type { ChatMessage } from '../../types.ts';

/** A message's text: its string, or its text parts joined by newlines — as llama.cpp joins them for a template that
 * takes content only as a string. One rule for what the model reads, what the cache matches and what a page shows. */
export function contentText(content: ChatMessage['content']): string {
  return Array.isArray(content) ? content.map((p) => (p.type === 'text' ? p.text : '')).join('\n') : (content ?? '');
}

/** The text a reply continues: the last message's, where it is an assistant's with prefix: true; else null. */
export function replyPrefix(messages: readonly ChatMessage[]): string | null {
  const last = messages.at(-1);
  return last?.prefix ? contentText(last.content) : null;
}
