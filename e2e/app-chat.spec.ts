// The app's chat as a finished product: code in answers highlighted with a Copy button (markup in a code block stays
// text), conversations exported (JSON with their images, one as Markdown) and imported back the same, a hostile file
// refused; a long answer streaming without moving the message box; keyboard shortcuts; the system-prompt presets; no
// accessibility violations of serious or critical impact (axe-core) with the catalogue, a conversation and code on the
// page; pictures in light and dark mode and at a phone's width (Chromium). Chromium and Firefox. The clipboard and the
// browser's download of an exported file are the boundaries played here: a stub records what was copied, and the
// exported file is read from the link the app clicks.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { testPng } from '../test/fixtures/media.ts';
import { b64 } from './attach.ts';
import { expect, test } from './fixtures.ts';
import { putConversations } from './kv.ts';
import type { Site, Tab } from './site.ts';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const CODE = 'def greet(name):\n    # say hello\n    return f"Hello, {name}!"\n';
const HOSTILE_CODE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';
const ANSWER = `Here is a function:\n\n\`\`\`python\n${CODE}\`\`\`\n\nAnd markup, as text:\n\n\`\`\`\n${HOSTILE_CODE}\n\`\`\``;

/** Records what the app copies and the files it offers for download (see the header). */
function recordBoundaries(site: Site) {
  site.initScript(() => {
    const w = window as unknown as { copied: string[]; downloads: Array<{ href: string; name: string }> };
    w.copied = [];
    w.downloads = [];
    Object.defineProperty(navigator, 'clipboard', {
      value: { writeText: async (t: string) => void w.copied.push(t) },
      configurable: true,
    });
    const click = HTMLAnchorElement.prototype.click;
    HTMLAnchorElement.prototype.click = function (this: HTMLAnchorElement) {
      if (this.download) return void w.downloads.push({ href: this.href, name: this.download });
      return click.call(this);
    };
  });
}

/** Two conversations as the app keeps them: one with code in its answer, one with an image. */
const SEEDED = [
  {
    id: 'code',
    title: 'A greeting in Python',
    updatedAt: 2,
    messages: [
      { role: 'user', content: 'Write a greeting in Python' },
      { role: 'assistant', content: ANSWER },
    ],
  },
  {
    id: 'picture',
    title: 'What is in this picture?',
    updatedAt: 1,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `png:${b64(testPng(8, 8, 1))}` } },
          { type: 'text', text: 'What is in this picture?' },
        ],
      },
      { role: 'assistant', content: 'A small square.' },
    ],
  },
];

const titles = (tab: Tab) => tab.texts('#conversations .title');

/** Clicks `selector` and returns the file the app then offers, as text. */
async function downloadFrom(tab: Tab, selector: string) {
  const count = () => tab.evaluate(() => (window as unknown as { downloads: unknown[] }).downloads.length);
  const before = await count();
  await tab.click(selector);
  await expect.poll(count).toBe(before + 1);
  return tab.evaluate(async () => {
    const d = (window as unknown as { downloads: Array<{ href: string; name: string }> }).downloads.at(-1)!;
    return { name: d.name, text: await (await fetch(d.href)).text() };
  });
}

/** Puts a file into the import input, as the file picker does. */
const importText = (tab: Tab, name: string, text: string) =>
  tab.evaluate(
    ({ name, text }) => {
      const input = document.getElementById('import-file') as HTMLInputElement;
      const dt = new DataTransfer();
      dt.items.add(new File([text], name, { type: 'application/json' }));
      input.files = dt.files;
      input.dispatchEvent(new Event('change', { bubbles: true }));
    },
    { name, text },
  );

/** axe-core's violations of serious or critical impact on the page as it is. */
async function accessibilityViolations(tab: Tab) {
  return tab.evaluate(async (source) => {
    if (!(window as { axe?: unknown }).axe) {
      const script = document.createElement('script');
      script.textContent = source;
      document.head.append(script);
    }
    const axe = (window as unknown as { axe: { run(): Promise<{ violations: Array<Record<string, unknown>> }> } }).axe;
    const { violations } = await axe.run();
    return violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({
        id: v.id,
        impact: v.impact,
        nodes: (v.nodes as Array<{ target: unknown }>).map((n) => JSON.stringify(n.target)).slice(0, 5),
      }));
  }, axeSource);
}

test('code highlighted with a Copy button, markup in code kept as text; export (JSON, Markdown) and import give the same conversations; a hostile file refused; no serious accessibility violations', async ({
  site,
}) => {
  recordBoundaries(site);
  const first = await site.tab('/');
  await first.evaluate(putConversations, SEEDED);
  await first.close();
  const tab = await site.tab('/');
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await expect.poll(() => titles(tab)).toEqual(['A greeting in Python', 'What is in this picture?']);
  await tab.click('#conversations li:first-child .title');
  await expect.poll(() => tab.count('.msg.assistant .code-block')).toBe(2);
  // Highlighted: the highlighter's spans in the Python block; the markup block is text and nothing of it ran.
  expect(await tab.count('.msg.assistant .code-block code span[class^="hljs-"]')).toBeGreaterThan(3);
  const blocks = await tab.evaluate(() =>
    [...document.querySelectorAll('.msg.assistant .code-block code')].map((c) => ({
      text: c.textContent,
      elements: [...c.querySelectorAll('*')].map((e) => e.localName),
    })),
  );
  expect(blocks[0]!.text).toBe(CODE);
  expect(blocks[1]).toEqual({ text: `${HOSTILE_CODE}\n`, elements: expect.not.arrayContaining(['img', 'script']) });
  expect(await tab.count('.msg img, .msg script')).toBe(0);
  expect(await tab.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
  await tab.click('.msg.assistant .code-block:first-of-type .copy-code');
  await expect.poll(() => tab.evaluate(() => (window as unknown as { copied: string[] }).copied)).toEqual([CODE]);
  expect(await tab.texts('.msg.assistant .code-block:first-of-type .copy-code')).toEqual(['Copied']);

  expect(await accessibilityViolations(tab)).toEqual([]);
  // The catalogue folded away (no model is loaded, so it is open), for the pictures.
  await tab.click('#models-toggle');
  expect(await tab.visible('#catalogue')).toBe(false);
  if (tab.playwright) {
    const page = tab.playwright;
    await page.screenshot({ path: 'docs/app-chat.png' });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: 'docs/app-dark.png' });
    expect(await accessibilityViolations(tab)).toEqual([]); // contrast in dark mode too
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: 'docs/app-phone.png' });
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 720 });
  }

  // Markdown: the open conversation, who said what.
  const md = await downloadFrom(tab, '#export-md');
  expect(md.name).toBe('A greeting in Python.md');
  expect(md.text).toContain('# A greeting in Python');
  expect(md.text).toContain('**You:**\n\nWrite a greeting in Python');
  expect(md.text).toContain(`**Assistant:**\n\n${ANSWER}`);

  // JSON: every conversation, the image inside; deleted here, then imported back the same.
  const exported = await downloadFrom(tab, '#export-json');
  expect(exported.name).toMatch(/^hearth-conversations-\d{4}-\d{2}-\d{2}\.json$/);
  const file = JSON.parse(exported.text);
  expect(file.conversations.map((c: { title: string }) => c.title)).toEqual([
    'A greeting in Python',
    'What is in this picture?',
  ]);
  expect(file.conversations[1].messages[0].content[0].image_url.url).toBe(
    `data:image/png;base64,${b64(testPng(8, 8, 1))}`,
  );
  for (let i = 0; i < 2; i++) {
    await tab.click('#conversations li:first-child .delete');
    await expect.poll(async () => (await titles(tab)).length).toBe(1 - i);
  }
  await importText(tab, exported.name, exported.text);
  await expect.poll(() => tab.texts('#transfer-status')).toEqual(['Imported 2 conversations.']);
  await expect.poll(() => titles(tab)).toEqual(['A greeting in Python', 'What is in this picture?']);
  const again = JSON.parse((await downloadFrom(tab, '#export-json')).text);
  expect(again.conversations).toEqual(file.conversations);
  await tab.click('#conversations li:nth-child(2) .title');
  await expect.poll(() => tab.count('.msg.user .thumb')).toBe(1);
  // The same file again adds nothing.
  await importText(tab, exported.name, exported.text);
  await expect.poll(() => tab.texts('#transfer-status')).toEqual(['Imported 0 conversations, 2 already here.']);

  // Hostile files: not JSON; JSON of another kind; a conversation whose image is a URL to fetch, one with a role the
  // app does not write — left out, the valid one taken.
  await importText(tab, 'notes.json', 'not json at all');
  await expect
    .poll(() => tab.texts('#transfer-status'))
    .toEqual([expect.stringMatching(/^Could not import notes\.json: this file is not JSON/)]);
  await importText(tab, 'other.json', JSON.stringify({ conversations: [] }));
  await expect
    .poll(() => tab.texts('#transfer-status'))
    .toEqual([expect.stringMatching(/not a Hearth conversation export/)]);
  const hostile = {
    ...file,
    conversations: [
      {
        ...file.conversations[1],
        id: 'fetches',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/x.png' } }] }],
      },
      { ...file.conversations[0], id: 'tool', messages: [{ role: 'tool', content: 'x' }] },
      { ...file.conversations[0], id: 'fine', title: 'Imported fine' },
    ],
  };
  await importText(tab, 'hostile.json', JSON.stringify(hostile));
  await expect
    .poll(() => tab.texts('#transfer-status'))
    .toEqual([
      'Imported 1 conversation, 2 left out (conversation 1: not a valid conversation; conversation 2: not a valid conversation).',
    ]);
  expect(await titles(tab)).toContain('Imported fine');
});

test('a long answer streams without moving the message box (the log follows it, the page stays); Esc stops it; shortcuts; presets; no serious accessibility violations with the catalogue open', async ({
  site,
}) => {
  const tab = await site.tab('/');
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await expect.poll(() => tab.count('.model-card')).toBeGreaterThan(10);
  expect(await accessibilityViolations(tab)).toEqual([]);

  // Presets fill the system prompt, which stays editable; the menu says when it is the visitor's own.
  await tab.evaluate(() => {
    const preset = document.getElementById('system-preset') as HTMLSelectElement;
    preset.selectedIndex = 3; // Programmer
    preset.dispatchEvent(new Event('change'));
  });
  expect(await tab.evaluate(() => (document.getElementById('system-prompt') as HTMLTextAreaElement).value)).toMatch(
    /^You are an experienced programmer/,
  );

  // A model that rambles: random weights, no end token in sight.
  await tab.evaluate(() => {
    const kind = document.getElementById('source-kind') as HTMLSelectElement;
    kind.value = 'url';
    kind.dispatchEvent(new Event('change'));
    (document.getElementById('model-url') as HTMLInputElement).value = '/test-models/qwen2-tiny.gguf';
  });
  await tab.click('#load');
  await expect.poll(() => tab.texts('#load-status')).toEqual([expect.stringContaining('Ready')]);
  await tab.fill('#prompt', 'Tell me a long story.');
  await tab.press('#prompt', 'Enter');
  const samples = await tab.evaluate(async () => {
    const chat = document.getElementById('chat')!;
    const composer = document.getElementById('composer')!;
    const out: Array<{ top: number; fromEnd: number; page: number; height: number; shown: number }> = [];
    // 4 s from when the answer first fills the log (a busy machine may take seconds to read the prompt), 30 s at most.
    const deadline = performance.now() + 30_000;
    let end = deadline;
    while (performance.now() < end) {
      if (end === deadline && chat.scrollHeight > chat.clientHeight) end = Math.min(deadline, performance.now() + 4000);
      await new Promise((r) => setTimeout(r, 100));
      out.push({
        top: Math.round(composer.getBoundingClientRect().top),
        fromEnd: chat.scrollHeight - chat.scrollTop - chat.clientHeight,
        page: document.scrollingElement!.scrollTop,
        height: chat.scrollHeight,
        shown: chat.clientHeight,
      });
    }
    return out;
  });
  // The answer grew past the log's height, and all the while the message box stayed where it was, the page did not
  // scroll, and the log showed the answer's end.
  expect(samples.at(-1)!.height).toBeGreaterThan(samples.at(-1)!.shown);
  expect(new Set(samples.map((s) => s.top)).size).toBe(1);
  expect(samples.every((s) => s.page === 0)).toBe(true);
  expect(samples.filter((s) => s.fromEnd > 2)).toEqual([]);
  // Esc stops it.
  await tab.press('#prompt', 'Escape');
  await expect.poll(async () => (await tab.texts('.msg.assistant .note')).at(-1)).toBe('stopped');

  // Ctrl+K searches titles; "/" returns to the message box; Ctrl+Shift+O starts a new chat.
  const key = (init: KeyboardEventInit) =>
    tab.evaluate(
      (init) => document.body.dispatchEvent(new KeyboardEvent('keydown', { bubbles: true, cancelable: true, ...init })),
      init,
    );
  await key({ key: 'k', ctrlKey: true });
  expect(await tab.evaluate(() => document.activeElement?.id)).toBe('search');
  await tab.evaluate(() => (document.activeElement as HTMLElement).blur());
  await key({ key: '/' });
  expect(await tab.evaluate(() => document.activeElement?.id)).toBe('prompt');
  await key({ key: 'O', ctrlKey: true, shiftKey: true });
  await expect.poll(() => tab.count('.msg')).toBe(0);
  expect(await titles(tab)).toEqual(['Tell me a long story.']);
  expect(await accessibilityViolations(tab)).toEqual([]);
});
