// <hearth-chat> as a site embeds it: e2e/widget-host.html, served without isolation headers and under a strict
// Content-Security-Policy, loads dist/widget/hearth-chat.js with one script tag. Runs on the plain server only.
import { mkdirSync } from 'node:fs';
import type { Page } from '@playwright/test';
import { expect, test } from '@playwright/test';
import { savedConversations } from './kv.ts';

declare global {
  interface Window {
    seen: { events: Array<{ type: string; detail: unknown }>; violations: string[] };
    pwned?: number;
  }
}

/** Records the widget's events and any CSP violation, from before the page's own scripts run. */
async function watch(page: Page) {
  await page.addInitScript(() => {
    window.seen = { events: [], violations: [] };
    document.addEventListener('securitypolicyviolation', (e) => window.seen.violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    for (const type of ['hearth-progress', 'hearth-ready', 'hearth-message', 'hearth-error']) {
      document.addEventListener(type, (e) => window.seen.events.push({ type, detail: JSON.parse(JSON.stringify((e as CustomEvent).detail ?? null)) }));
    }
  });
}

const widget = (page: Page) => page.locator('hearth-chat');

test('one tag on an ordinary page: nothing loads until opened, then a progress bar, an answer, and after a reload the conversation continues from IndexedDB', async ({ page }) => {
  await watch(page);
  const requests: string[] = [];
  page.on('request', (r) => requests.push(new URL(r.url()).pathname));
  await page.goto('/e2e/widget-host.html');
  await expect(widget(page).locator('.launcher')).toHaveText('Ask the baker');
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(false);
  // Styled by the page through custom properties.
  await expect(widget(page).locator('.launcher')).toHaveCSS('background-color', 'rgb(37, 99, 235)');
  await page.waitForTimeout(500);
  expect(requests.filter((p) => p.startsWith('/hearth/') || p.startsWith('/test-models/'))).toEqual([]);

  await widget(page).locator('.launcher').click();
  await expect(widget(page).locator('.msg.assistant').first().locator('strong')).toHaveText('anything'); // the welcome, as Markdown
  await page.waitForFunction(() => window.seen.events.some((e) => e.type === 'hearth-ready' || e.type === 'hearth-error'));
  const seen = await page.evaluate(() => window.seen);
  expect(seen.events.filter((e) => e.type === 'hearth-error')).toEqual([]);
  const progress = seen.events.filter((e) => e.type === 'hearth-progress').map((e) => e.detail as { phase: string; loaded: number });
  expect(progress.some((p) => p.phase === 'load' && p.loaded > 0)).toBe(true);
  const ready = seen.events.find((e) => e.type === 'hearth-ready')!.detail as { info: { build: string } };
  expect(ready.info.build).toBe('st'); // no isolation: the single-thread build
  expect(requests).toContain('/hearth/engine.worker.js');

  await widget(page).locator('textarea').fill('What is a sourdough starter?');
  await widget(page).locator('textarea').press('Enter');
  await expect(widget(page).locator('.msg.assistant').last()).toHaveText('Hello, world!');
  await expect(widget(page).locator('.msg.user')).toHaveText(['What is a sourdough starter?']);
  // The KV save runs after the answer, in the background: wait until IndexedDB has the conversation.
  await expect.poll(() => page.evaluate(savedConversations)).toBe(1);

  await page.reload();
  await widget(page).locator('.launcher').click();
  // The conversation is back, before and after the model loads.
  await expect(widget(page).locator('.msg.user')).toHaveText(['What is a sourdough starter?']);
  await expect(widget(page).locator('.msg.assistant')).toHaveText(['Hello! Ask me anything about bread.', 'Hello, world!']);
  await page.waitForFunction(() => window.seen.events.some((e) => e.type === 'hearth-ready'));
  const answer = await widget(page).evaluate((el) => (el as unknown as { send(t: string): Promise<string> }).send('And rye?'));
  expect(answer).toBe('Hello, world!');
  await expect(widget(page).locator('.status')).toContainText('restored from IndexedDB');
  mkdirSync('docs', { recursive: true });
  await page.screenshot({ path: 'docs/widget.png' }); // the README's picture
  await expect(widget(page).locator('.msg.user')).toHaveText(['What is a sourdough starter?', 'And rye?']);
  expect((await page.evaluate(() => window.seen)).violations).toEqual([]);
});

// Payloads an attacker could get a model to write (a page it summarised, a prompt injection). The stream is fed by the
// test through element.engine (not a model: no fixture model writes these), through the widget's real rendering path.
const PAYLOADS = [
  '<script>window.pwned = 1</script>',
  '<img src=x onerror="window.pwned = 2">',
  '[click me](javascript:window.pwned=3)',
  '<a href="javascript:window.pwned=4">link</a>',
  '<svg onload="window.pwned = 5"><circle r=1 /></svg>',
  '<iframe src="javascript:window.pwned=6"></iframe>',
  '<details open ontoggle="window.pwned = 7">x</details>',
  '![pic](x" onerror="window.pwned=8)',
  '<style>* { display: none !important }</style>',
  '<form action="javascript:window.pwned=9"><button>go</button></form>',
  '<math><mi xlink:href="javascript:window.pwned=10">m</mi></math>',
  '<a href="https://example.com/" onclick="window.pwned = 11">a real link</a>',
  '<div style="background:url(javascript:window.pwned=12)">styled</div>',
  '<object data="javascript:window.pwned=13"></object>',
  '<p onmouseover="window.pwned = 14">hover</p>',
  '[data](data:text/html;base64,PHNjcmlwdD53aW5kb3cucHduZWQ9MTU8L3NjcmlwdD4=)',
  '<noscript><p title="</noscript><img src=x onerror=window.pwned=16>">',
];
const MARKDOWN = '**bold** and a [site](https://example.com/docs)\n\n```js\nconst bread = "<b>rye</b>";\n```\n\n- one\n- two';

test('model output is rendered as sanitised Markdown: XSS payloads never run (stream fed by the test, not a model)', async ({ page }) => {
  await watch(page);
  await page.goto('/e2e/widget-host.html');
  await widget(page).evaluate((el, text) => {
    // An engine that streams `text` in small pieces, cutting tags apart as a token stream does.
    (el as unknown as { engine: unknown }).engine = {
      chat: { completions: { create: async () => (async function* () {
        for (let i = 0; i < text.length; i += 5) yield { choices: [{ index: 0, delta: { content: text.slice(i, i + 5) }, finish_reason: null }] };
      })() } },
    };
  }, [...PAYLOADS, MARKDOWN].join('\n\n'));
  await widget(page).evaluate((el) => (el as unknown as { send(t: string): Promise<string> }).send('Summarise this page'));
  const answer = widget(page).locator('.msg.assistant').last();
  await expect(answer.locator('strong')).toHaveText('bold');
  await expect(answer.locator('pre code')).toHaveText('const bread = "<b>rye</b>";');
  await expect(answer.locator('li')).toHaveCount(2);
  for (const link of await answer.locator('a[href]').all()) {
    expect(await link.getAttribute('href')).toMatch(/^https:\/\//);
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toContain('noopener');
  }
  await expect(answer.locator('a[href="https://example.com/docs"]')).toHaveText('site');
  await answer.evaluate((el) => el.querySelectorAll('*').forEach((n) => n.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }))));
  await page.waitForTimeout(500); // let any onerror/onload/ontoggle fire
  expect(await answer.locator('script, img, svg, iframe, style, form, math, object, noscript').count()).toBe(0);
  const handlers = await answer.evaluate((el) => [...el.querySelectorAll('*')].flatMap((n) => [...n.attributes].map((a) => a.name))
    .filter((name) => name.startsWith('on') || name === 'style'));
  expect(handlers).toEqual([]);
  expect(await page.evaluate(() => window.pwned)).toBeUndefined();
  await expect(widget(page).locator('.launcher')).toBeHidden(); // the page's layout survived the <style> payload
  await expect(widget(page).locator('.panel')).toBeVisible();
  // Chromium's DOMParser documents (where DOMPurify parses) inherit the page's CSP: the payloads' inline handlers and
  // styles are reported there as blocked. Those are the only violations: nothing of the widget's own is.
  const violations = (await page.evaluate(() => window.seen)).violations;
  expect(violations.filter((v) => !/^(script-src-attr|style-src-attr|style-src-elem) inline$/.test(v))).toEqual([]);
});
