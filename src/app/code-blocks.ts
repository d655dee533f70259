// Code blocks in an answer, once it is complete: highlighted (highlight.js, the languages people ask about most) and
// given a Copy button. The answer is already sanitised Markdown (ui/markdown.ts); the highlighter's output is parsed
// again through DOMPurify allowing only <span class="hljs-…">, so a code block that holds markup stays text.
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';

const LANGUAGES = { bash, c, cpp, css, go, java, javascript, json, python, rust, sql, typescript, xml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

const purify = DOMPurify();
purify.addHook('uponSanitizeAttribute', (_node, data) => {
  // Only the highlighter's own classes.
  if (data.attrName === 'class') data.keepAttr = /^(hljs-[\w-]+\s*)+$/.test(data.attrValue) || data.attrValue === '';
});

/** A code block's text as highlighted spans (no other element can come out of it). */
export function highlighted(code: string): DocumentFragment {
  const { value } = hljs.highlightAuto(code, Object.keys(LANGUAGES));
  return purify.sanitize(value, { RETURN_DOM_FRAGMENT: true, ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'] });
}

/** Highlights the code blocks under `root` and gives each a Copy button (beside the code, not in its text). */
export function finishCodeBlocks(root: HTMLElement) {
  for (const code of root.querySelectorAll<HTMLElement>('pre > code')) {
    const pre = code.parentElement!;
    if (pre.parentElement?.classList.contains('code-block')) continue;
    const text = code.textContent ?? '';
    code.replaceChildren(highlighted(text));
    code.classList.add('hljs');
    pre.tabIndex = 0; // a long line scrolls sideways: reachable by keyboard too
    const copy = Object.assign(document.createElement('button'), {
      type: 'button',
      className: 'copy-code',
      textContent: 'Copy',
    });
    copy.title = 'Copy the code';
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(text);
        copy.textContent = 'Copied';
      } catch {
        copy.textContent = 'Copy failed';
      }
      setTimeout(() => (copy.textContent = 'Copy'), 1500);
    });
    const block = Object.assign(document.createElement('div'), { className: 'code-block' });
    pre.replaceWith(block);
    block.append(pre, copy);
  }
}
