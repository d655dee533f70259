// Model output is untrusted. It reaches the page only as Markdown rendered by marked and then cleaned by DOMPurify
// against a short allowlist: text formatting, lists, tables, code and links (http, https, mailto). Nothing in it can
// run, fetch or move: no script or handlers, no element that loads something by itself (media become links a
// visitor may click), no style, class or id (so it cannot restyle, hide or stand in for the chat's own controls),
// no dialog, form or popover. DOMPurify parses into an inert document, where nothing loads either.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { hearthPolicy } from '../core/trusted-types.ts';

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    image: ({ href, text }) => `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`,
  },
});

const ALLOWED_TAGS = [
  'a',
  'b',
  'blockquote',
  'br',
  'code',
  'del',
  'em',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'hr',
  'i',
  'li',
  'ol',
  'p',
  'pre',
  's',
  'strong',
  'sub',
  'sup',
  'table',
  'tbody',
  'td',
  'th',
  'thead',
  'tr',
  'ul',
];
// `align` is what marked writes on table cells; `start` numbers an ordered list.
const ALLOWED_ATTR = ['href', 'title', 'align', 'start'];
const SAFE_URL = /^(?:https?:|mailto:)/i;

/** Elements that fetch on their own, and the attributes that hold what they fetch: each becomes a link instead. */
const MEDIA: Record<string, string[]> = {
  img: ['src', 'srcset'],
  video: ['src', 'poster'],
  audio: ['src'],
  source: ['src', 'srcset'],
  track: ['src'],
};

const purify = DOMPurify();
purify.addHook('uponSanitizeElement', (node, data) => {
  if (!MEDIA[data.tagName] || node.nodeType !== 1) return;
  // The element and the media inside it (a <video>'s <source>s and <track>s, which DOMPurify drops with it): a link
  // before it for each address, built here from a checked URL and plain text. DOMPurify then removes the element.
  const el = node as Element;
  const found = [el, ...el.querySelectorAll(Object.keys(MEDIA).join(','))].flatMap((m) =>
    MEDIA[m.localName]!.map((a) => {
      const url = (m.getAttribute(a) ?? '').trim().split(/[\s,]+/)[0]!;
      return /^https?:\/\//i.test(url)
        ? { url, label: `[${m.localName}: ${m.getAttribute('alt') || m.getAttribute('title') || url}]` }
        : null;
    }),
  );
  const seen = new Set<string>();
  for (const link of found) {
    if (!link || seen.has(link.url)) continue;
    seen.add(link.url);
    el.before(
      Object.assign(el.ownerDocument.createElement('a'), {
        href: link.url,
        target: '_blank',
        rel: 'noopener noreferrer nofollow',
        textContent: link.label,
      }),
      ' ',
    );
  }
});
purify.addHook('afterSanitizeAttributes', (node) => {
  // Links open in a new tab that cannot reach back to this page.
  if (node.nodeName === 'A' && (node as Element).hasAttribute('href')) {
    (node as Element).setAttribute('target', '_blank');
    (node as Element).setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

/** Markdown as a fragment of safe DOM, ready to append. */
export function renderMarkdown(text: string): DocumentFragment {
  const html = marked.parse(text, { async: false }) as string;
  const policy = hearthPolicy();
  return purify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOWED_URI_REGEXP: SAFE_URL,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    // Under Trusted Types, DOMPurify's own parse goes through Hearth's one policy (else it would need a 'dompurify'
    // one).
    ...(policy ? { TRUSTED_TYPES_POLICY: policy as never } : {}),
  });
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
