// What the app and the widget draw alike: a message in the log, and the composer that sends on Enter.

export type BubbleRole = 'user' | 'assistant' | 'error';

/**
 * Appends a message to the log and scrolls the log (never the page: a widget's host page must not move). An
 * assistant's text is Markdown, rendered by `markdown` (sanitised: ui/markdown.ts); the others are plain text.
 */
export function bubble(
  log: HTMLElement,
  role: BubbleRole,
  text: string,
  markdown: (text: string) => Node,
): HTMLElement {
  const el = log.ownerDocument.createElement('div');
  el.className = `msg ${role}`;
  if (role === 'assistant') el.append(markdown(text));
  else el.textContent = text;
  log.append(el);
  log.scrollTop = log.scrollHeight;
  return el;
}

/** Enter sends; Shift+Enter starts a new line. */
export function sendOnEnter(input: HTMLTextAreaElement, send: () => void) {
  input.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.shiftKey || e.isComposing) return;
    e.preventDefault();
    send();
  });
}
