// Model output is untrusted. It reaches the page only as Markdown rendered by marked and then cleaned by DOMPurify,
// which keeps formatting, code and links and drops anything that runs (script, event handlers, javascript: URLs).
// Images become links: an <img> would make the browser fetch whatever address the model wrote.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    image: ({ href, text }) => `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`,
  },
});

const purify = DOMPurify();
purify.addHook('afterSanitizeAttributes', (node) => {
  // Links open in a new tab that cannot reach back to this page.
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

const FORBID_TAGS = ['style', 'img', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'svg', 'math'];

/** Markdown as a fragment of safe DOM, ready to append. */
export function renderMarkdown(text: string): DocumentFragment {
  const html = marked.parse(text, { async: false }) as string;
  return purify.sanitize(html, { RETURN_DOM_FRAGMENT: true, FORBID_TAGS, FORBID_ATTR: ['style'] });
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
