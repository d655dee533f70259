// <hearth-chat> as a site embeds it: e2e/widget-host.html, served without isolation headers and under a strict
// Content-Security-Policy (on the page, or on every response under /csp-all/), loads dist/widget/hearth-chat.js with
// one script tag. Runs on the plain server, in Chromium and Firefox.
import { mkdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { testPng } from '../test/fixtures/media.ts';
import { PROJECTORS } from '../test/fixtures/projectors.ts';
import { b64, drawnThumbnails, putFiles, recordTimings, type TestFile, timings, WIDGET_COMPOSER } from './attach.ts';
import { expect, test } from './fixtures.ts';
import { savedConversations } from './kv.ts';
import { served, type Site, type Tab } from './site.ts';

declare global {
  interface Window {
    seen: { events: Array<{ type: string; detail: unknown }>; violations: string[] };
    pwned?: number;
    sentParams?: Array<Record<string, unknown>>;
  }
}

type Widget = HTMLElement & { send(text: string): Promise<string>; engine: unknown };

/** Records the widget's events and any CSP violation, from before the page's own scripts run. */
function watch(site: Site) {
  site.initScript(() => {
    window.seen = { events: [], violations: [] };
    document.addEventListener('securitypolicyviolation', (e) =>
      window.seen.violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
    for (const type of ['hearth-progress', 'hearth-ready', 'hearth-message', 'hearth-error']) {
      document.addEventListener(type, (e) => {
        const detail = (e as CustomEvent).detail as { error?: { name: string; code: string; message: string } } | null;
        // Errors do not survive JSON: keep what identifies them.
        const plain = detail?.error
          ? { error: { name: detail.error.name, code: detail.error.code, message: detail.error.message } }
          : detail;
        window.seen.events.push({ type, detail: JSON.parse(JSON.stringify(plain ?? null)) });
      });
    }
  });
}

const events = (tab: Tab, type: string) =>
  tab.evaluate((t) => window.seen.events.filter((e) => e.type === t).map((e) => e.detail), type);
const ready = (tab: Tab) =>
  tab.waitFor(() => window.seen.events.some((e) => e.type === 'hearth-ready' || e.type === 'hearth-error'));
const send = (tab: Tab, text: string) =>
  tab.evaluate((t) => (document.querySelector('hearth-chat') as Widget).send(t), text);
const setAttrs = (tab: Tab, attrs: Record<string, string>) =>
  tab.evaluate((a) => {
    for (const [k, v] of Object.entries(a)) document.querySelector('hearth-chat')!.setAttribute(k, v);
  }, attrs);

/** The page opened with the widget, opened and ready (its model loaded). */
async function openWidget(
  site: Site,
  path = '/e2e/widget-host.html',
  attrs: Record<string, string> = {},
): Promise<Tab> {
  const tab = await site.tab(path);
  await setAttrs(tab, attrs);
  await tab.click('.launcher');
  await ready(tab);
  expect(await events(tab, 'hearth-error')).toEqual([]);
  return tab;
}

for (const [policy, path] of [
  ['on the page', '/e2e/widget-host.html'],
  ['on every response', '/csp-all/e2e/widget-host.html'],
] as const) {
  test(`one tag under a strict CSP ${policy}: nothing loads until opened, then progress, an answer, and after a reload the conversation continues from IndexedDB`, async ({
    site,
    baseURL,
  }) => {
    watch(site);
    const since = (await served(baseURL!)).length;
    const tab = await site.tab(path);
    await expect.poll(() => tab.texts('.launcher')).toEqual(['Ask the baker']);
    expect(await tab.evaluate(() => crossOriginIsolated)).toBe(false);
    // Styled by the page through custom properties.
    expect(
      await tab.evaluate(
        () =>
          getComputedStyle(document.querySelector('hearth-chat')!.shadowRoot!.querySelector('.launcher')!)
            .backgroundColor,
      ),
    ).toBe('rgb(37, 99, 235)');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await served(baseURL!, since)).filter((p) => /\/(hearth|test-models)\//.test(p))).toEqual([]);

    await tab.click('.launcher');
    await expect.poll(() => tab.texts('.msg.assistant strong')).toEqual(['anything']); // the welcome, as Markdown
    await ready(tab);
    expect(await events(tab, 'hearth-error')).toEqual([]);
    const progress = (await events(tab, 'hearth-progress')) as Array<{ phase: string; loaded: number; file?: string }>;
    expect(progress.some((p) => p.phase === 'load' && p.loaded > 0)).toBe(true);
    // The page ships its system prompt's state (the prompt-state attribute): downloaded like the model.
    expect(progress.some((p) => p.phase === 'download' && p.file === 'prompt-state' && p.loaded > 0)).toBe(true);
    const [readyEvent] = (await events(tab, 'hearth-ready')) as Array<{ info: { build: string; backend: string } }>;
    expect(readyEvent!.info).toMatchObject({ build: 'st-relaxed', backend: 'wasm' }); // no isolation: the single-thread build (relaxed SIMD: Chromium, Firefox)
    expect(await served(baseURL!, since)).toContain(path.replace('e2e/widget-host.html', 'hearth/engine.worker.js'));

    await tab.fill('textarea', 'What is a sourdough starter?');
    await tab.press('textarea', 'Enter');
    await expect
      .poll(() => tab.texts('.msg.assistant'))
      .toEqual(['Hello! Ask me anything about bread.', 'Hello, world!']);
    expect(await tab.texts('.msg.user')).toEqual(['What is a sourdough starter?']);
    // A first visit: the system prompt was not read, it came with the page.
    await expect.poll(() => tab.texts('.status')).toEqual([expect.stringContaining("from the site's prompt state")]);
    // The KV save runs after the answer, in the background: wait until IndexedDB has the conversation.
    await expect.poll(() => tab.evaluate(savedConversations)).toBe(1);

    await tab.reload();
    await tab.click('.launcher');
    // The conversation is back, before and after the model loads.
    await expect.poll(() => tab.texts('.msg.user')).toEqual(['What is a sourdough starter?']);
    expect(await tab.texts('.msg.assistant')).toEqual(['Hello! Ask me anything about bread.', 'Hello, world!']);
    await ready(tab);
    expect(await send(tab, 'And rye?')).toBe('Hello, world!');
    await expect.poll(() => tab.texts('.status')).toEqual([expect.stringContaining('restored from IndexedDB')]);
    if (policy === 'on the page') {
      mkdirSync('docs', { recursive: true });
      await tab.screenshot('docs/widget.png'); // the README's picture
    }
    expect(await tab.texts('.msg.user')).toEqual(['What is a sourdough starter?', 'And rye?']);
    expect(await tab.evaluate(() => window.seen.violations)).toEqual([]);
  });
}

test("a CSP on every response without 'wasm-unsafe-eval' is an error that names the directive, not a hang", async ({
  site,
}) => {
  watch(site);
  const tab = await site.tab('/csp-all-no-wasm/e2e/widget-host.html');
  await tab.click('.launcher');
  await ready(tab);
  const [error] = (await events(tab, 'hearth-error')) as Array<{
    error: { name: string; code: string; message: string };
  }>;
  expect(error!.error).toMatchObject({ name: 'EngineError', code: 'csp_blocked' });
  expect(error!.error.message).toMatch(/'wasm-unsafe-eval'/);
  await expect
    .poll(() => tab.texts('.status'))
    .toEqual([expect.stringMatching(/Could not start: .*'wasm-unsafe-eval'/)]);
  // A message sent while the engine cannot start is refused, and waits in the box for the next try.
  const sent = await tab.evaluate(async () => {
    const widget = document.querySelector('hearth-chat') as HTMLElement & { send(text: string): Promise<string> };
    const error = await widget.send('Is rye bread sour?').then(
      () => null,
      (e: { code?: string }) => e.code,
    );
    return { error, box: widget.shadowRoot!.querySelector('textarea')!.value };
  });
  expect(sent).toEqual({ error: 'csp_blocked', box: 'Is rye bread sour?' });
});

/** A WebGPU adapter with shader-f16 (simulated: this machine has no GPU), as a GPU machine offers one. */
function simulateGpu(site: Site) {
  site.initScript(() => {
    const adapter = {
      features: new Set(['shader-f16']),
      limits: { maxStorageBufferBindingSize: 1 << 30, maxBufferSize: 1 << 30 },
      info: { vendor: 'simulated', architecture: '', device: '', description: 'simulated adapter' },
    };
    Object.defineProperty(Navigator.prototype, 'gpu', {
      configurable: true,
      get: () => ({ requestAdapter: async () => adapter }),
    });
  });
}

test('with a WebGPU adapter on the page (simulated), the widget tries the GPU engine, whose worker finds none, and answers on the CPU saying why; a site that names wllama under a strict CSP falls back too, saying which directive blocked it', async ({
  site,
  baseURL,
}) => {
  watch(site);
  simulateGpu(site);
  const since = (await served(baseURL!)).length;
  const plain = await openWidget(site);
  const [first] = (await events(plain, 'hearth-ready')) as Array<{
    info: { backend: string; selection: { reason: string } };
  }>;
  expect(first!.info.backend).toBe('wasm');
  // The simulated adapter is the page's alone: llama.cpp's WebGPU backend, in the engine's worker, finds none.
  expect(first!.info.selection.reason).toMatch(
    /^the GPU engine could not start: llama\.cpp's WebGPU backend could not use this adapter: .+; the engine runs on the CPU$/,
  );
  const fetched = await served(baseURL!, since);
  expect(fetched.filter((p) => /hearth-webgpu\.wasm/.test(p))).toHaveLength(1); // tried once
  expect(fetched.filter((p) => /wllama/.test(p))).toEqual([]); // wllama is never loaded unless named
  expect(await send(plain, 'Hi')).toBe('Hello, world!');
  await plain.close();

  // backend="wllama": wllama's worker comes from a blob: URL, which script-src 'self' forbids. Before, this hung forever.
  const optedIn = await openWidget(site, '/e2e/widget-host.html', { backend: 'wllama' });
  const [second] = (await events(optedIn, 'hearth-ready')) as Array<{
    info: { backend: string; selection: { reason: string } };
  }>;
  expect(second!.info.backend).toBe('wasm');
  expect(second!.info.selection.reason).toMatch(
    /Content-Security-Policy blocked wllama's worker .*it needs blob: in (worker-src|script-src)/,
  );
  expect(await send(optedIn, 'Hi')).toBe('Hello, world!');
});

// Payloads an attacker could get a model to write (a page it summarised, a prompt injection). The stream is fed by the
// test through element.engine (not a model: no fixture model writes these), through the widget's real rendering path.
const XSS = [
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
/** Elements that fetch when drawn, each pointing at the test server's /exfil/ (what an attacker's server would log). */
const FETCHING = (origin: string) => [
  `<video poster="${origin}/exfil/video-poster"></video>`,
  `<audio src="${origin}/exfil/audio-src" autoplay></audio>`,
  `<video><source src="${origin}/exfil/source-src"></video>`,
  `<video><track default src="${origin}/exfil/track-src"></video>`,
  `<table background="${origin}/exfil/table-background"><tr><td>t</td></tr></table>`,
  `<img src="${origin}/exfil/img-src">`,
  `![chart](${origin}/exfil/markdown-image)`,
  `<picture><source srcset="${origin}/exfil/picture-srcset"><img src="${origin}/exfil/picture-img"></picture>`,
  `<input type="image" src="${origin}/exfil/input-image">`,
  `<link rel="stylesheet" href="${origin}/exfil/link-href">`,
  `<embed src="${origin}/exfil/embed-src">`,
  `<body background="${origin}/exfil/body-background">`,
  `<div style="background-image:url(${origin}/exfil/style-url)">s</div>`,
  `<a href="${origin}/exfil/ping" ping="${origin}/exfil/ping-attr">a link, not clicked</a>`,
];
/** Output that poses as the widget's controls or tries to leave its box. */
const TAKEOVER = [
  '<span class="send">fake send</span> <span class="stop">fake stop</span> <button class="send">x</button>',
  '<dialog open>a dialog over the page</dialog>',
  '<div popover="manual" id="p">popover</div>',
  '<p id="hearth" name="send">clobbering</p>',
];
const MARKDOWN =
  '**bold** and a [site](https://example.com/docs)\n\n```js\nconst bread = "<b>rye</b>";\n```\n\n- one\n- two';

/** Gives the widget an engine that streams `text` in small pieces, cutting tags apart as a token stream does, and
 * records what it was asked. */
async function feed(tab: Tab, text: string) {
  await tab.evaluate((t) => {
    window.sentParams = [];
    (document.querySelector('hearth-chat') as Widget).engine = {
      chat: {
        completions: {
          create: async (params: Record<string, unknown>) => {
            window.sentParams!.push(
              JSON.parse(JSON.stringify({ ...params, signal: undefined, onProgress: undefined })),
            );
            return (async function* () {
              for (let i = 0; i < t.length; i += 5) {
                await new Promise((resolve) => setTimeout(resolve, 0));
                yield { choices: [{ index: 0, delta: { content: t.slice(i, i + 5) }, finish_reason: null }] };
              }
            })();
          },
        },
      },
    };
  }, text);
}

for (const csp of ['strict', 'none']) {
  test(`model output cannot run, fetch, restyle or pose as the controls (CSP: ${csp}; stream fed by the test, not a model)`, async ({
    site,
    baseURL,
  }) => {
    watch(site);
    const origin = new URL(baseURL!).origin;
    const tab = await site.tab(`/e2e/widget-host.html?csp=${csp}`);
    await feed(tab, [...XSS, ...FETCHING(origin), ...TAKEOVER, MARKDOWN].join('\n\n'));
    const since = (await served(baseURL!)).length;
    await send(tab, 'Summarise this page');
    // Formatting, code and links stay.
    await expect.poll(() => tab.texts('.log .msg.assistant:last-child strong')).toEqual(['bold']);
    expect(await tab.texts('.log .msg.assistant:last-child pre code')).toEqual(['const bread = "<b>rye</b>";']);
    expect(await tab.count('.log .msg.assistant:last-child li')).toBe(2);
    const answer = await tab.evaluate(() => {
      const root = document.querySelector('hearth-chat')!.shadowRoot!;
      const last = root.querySelector('.log')!.lastElementChild!;
      last.querySelectorAll('*').forEach((n) => n.dispatchEvent(new MouseEvent('mouseover', { bubbles: true })));
      const center = (el: Element) => {
        const r = el.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2] as const;
      };
      return {
        tags: [...new Set([...last.querySelectorAll('*')].map((n) => n.tagName.toLowerCase()))].sort(),
        attributes: [
          ...new Set([...last.querySelectorAll('*')].flatMap((n) => [...n.attributes].map((a) => a.name))),
        ].sort(),
        links: [...last.querySelectorAll<HTMLAnchorElement>('a[href]')].map((a) => ({
          href: a.getAttribute('href'),
          target: a.target,
          rel: a.rel,
        })),
        // Nothing of the answer is taken out of the flow or drawn above the page…
        lifted: [...last.querySelectorAll('*')]
          .filter(
            (n) =>
              ['fixed', 'absolute', 'sticky'].includes(getComputedStyle(n).position) ||
              n.matches('dialog[open], :popover-open'),
          )
          .map((n) => n.tagName),
        // …and what a visitor clicks at the widget's controls is the controls.
        controls: ['textarea', 'form .send', 'header .close', 'header .new'].map((sel) => {
          const el = root.querySelector(sel)!;
          return root.elementFromPoint(...center(el)) === el;
        }),
      };
    });
    await new Promise((resolve) => setTimeout(resolve, 1000)); // let any onerror/onload/ontoggle fire, any media load
    // Nothing was fetched on its own: the attacker's server saw no request.
    expect((await served(baseURL!, since)).filter((p) => p.startsWith('/exfil/'))).toEqual([]);
    expect(
      answer.tags.filter(
        (t) => !['a', 'br', 'code', 'li', 'p', 'pre', 'strong', 'table', 'tbody', 'td', 'tr', 'ul'].includes(t),
      ),
    ).toEqual([]);
    expect(answer.attributes.filter((a) => !['href', 'target', 'rel', 'align'].includes(a))).toEqual([]);
    for (const link of answer.links) {
      expect(link.href).toMatch(/^https?:\/\//);
      expect(link).toMatchObject({ target: '_blank', rel: 'noopener noreferrer nofollow' });
    }
    // Media became links a visitor may click.
    expect(answer.links.map((l) => l.href)).toEqual(
      expect.arrayContaining([
        `${origin}/exfil/video-poster`,
        `${origin}/exfil/audio-src`,
        `${origin}/exfil/source-src`,
        `${origin}/exfil/track-src`,
        `${origin}/exfil/img-src`,
        `${origin}/exfil/markdown-image`,
        'https://example.com/docs',
      ]),
    );
    expect(answer.lifted).toEqual([]);
    expect(answer.controls).toEqual([true, true, true, true]);
    // Without a policy a handler that got through would have run. Under the strict one it could not run (window.pwned
    // would stay unset whatever the sanitiser did), so there the test rests on what can happen: the requests above,
    // and the attributes and elements left in the DOM.
    if (csp === 'none') expect(await tab.evaluate(() => window.pwned)).toBeUndefined();
    // The widget's own controls: Send works again, and nothing in the log answers to their names.
    expect(await tab.count('.log .msg .send, .log .msg .stop, .log .msg [class], .log .msg [id], .log dialog')).toBe(0);
    expect(
      await tab.evaluate(
        () =>
          (document.querySelector('hearth-chat')!.shadowRoot!.querySelector('form .send') as HTMLButtonElement)
            .disabled,
      ),
    ).toBe(false);
    expect(await tab.visible('.launcher')).toBe(false); // the page's layout survived the <style> payload
    expect(await tab.visible('.panel')).toBe(true);
    // The widget asked for a bounded reply.
    expect(await tab.evaluate(() => window.sentParams![0]!.max_tokens)).toBe(512);
    // The next answer streams with the real Stop shown.
    await feed(tab, 'x'.repeat(4000));
    const stream = tab.evaluate(() => (document.querySelector('hearth-chat') as Widget).send('More'));
    await expect.poll(() => tab.visible('form .stop')).toBe(true);
    await tab.click('form .stop');
    await stream;
    // Chromium's DOMParser documents (where DOMPurify parses) inherit the page's CSP: the payloads' inline handlers and
    // styles are reported there as blocked. Those are the only violations: nothing of the widget's own is.
    const violations = await tab.evaluate(() => window.seen.violations);
    expect(violations.filter((v) => !/^(script-src-attr|style-src-attr|style-src-elem) inline$/.test(v))).toEqual([]);
  });
}

test("works under Trusted Types (require-trusted-types-for 'script'; trusted-types hearth)", async ({ site }) => {
  watch(site);
  const tab = await openWidget(site, '/e2e/widget-host.html?csp=tt');
  expect(await send(tab, 'Hi')).toBe('Hello, world!');
  await expect.poll(() => tab.texts('.msg.assistant strong')).toEqual(['anything']); // Markdown through the policy
  await feed(tab, '**safe** <img src=x onerror="window.pwned = 1">');
  await send(tab, 'Again');
  await expect.poll(() => tab.texts('.log .msg.assistant:last-child strong')).toEqual(['safe']);
  expect(await tab.evaluate(() => window.pwned)).toBeUndefined();
  expect((await tab.evaluate(() => window.seen.violations)).filter((v) => /trusted-types/.test(v))).toEqual([]);
});

test('a long conversation stays within the context: 100 turns on a 512-token context, the oldest turns dropped from what the model reads, none from the screen', async ({
  site,
}) => {
  watch(site);
  const tab = await openWidget(site, '/e2e/widget-host.html', { 'context-size': '512', 'max-tokens': '32' });
  const answers = await tab.evaluate(async () => {
    const widget = document.querySelector('hearth-chat') as Widget;
    const out: string[] = [];
    for (let i = 1; i <= 100; i++) out.push(await widget.send(`Question number ${i}: which bread goes with soup?`));
    return out;
  });
  expect(answers).toEqual(new Array(100).fill('Hello, world!'));
  expect(await tab.count('.msg.error')).toBe(0);
  expect(await tab.count('.msg.user')).toBe(100);
  expect(await tab.texts('.note')).toEqual(['Earlier messages are no longer read by the model.']);
  // All of it kept, after a reload too.
  await tab.reload();
  await tab.click('.launcher');
  await expect.poll(() => tab.count('.msg.user')).toBe(100);
});

test('two tabs on one conversation take turns, and every turn is kept', async ({ site }) => {
  watch(site);
  const a = await openWidget(site);
  const b = await openWidget(site);
  for (let i = 1; i <= 3; i++) {
    expect(await send(a, `A${i}`)).toBe('Hello, world!');
    expect(await send(b, `B${i}`)).toBe('Hello, world!');
  }
  const order = ['A1', 'B1', 'A2', 'B2', 'A3', 'B3'];
  await expect.poll(() => a.texts('.msg.user')).toEqual(order); // the idle tab shows the other's turns
  expect(await b.texts('.msg.user')).toEqual(order);
  await a.reload();
  await a.click('.launcher');
  await expect.poll(() => a.texts('.msg.user')).toEqual(order);
});

test("widgets with different models on one site keep their own conversations, and neither load deletes the other's saved state", async ({
  site,
}) => {
  watch(site);
  const hello = await openWidget(site);
  await send(hello, 'For the hello model');
  await expect.poll(() => hello.evaluate(savedConversations)).toBe(1);
  await hello.close();
  const tiny = await openWidget(site, '/e2e/widget-host.html', { model: '/test-models/qwen2-tiny.gguf' });
  expect(await tiny.texts('.msg.user')).toEqual([]);
  await send(tiny, 'For the tiny model');
  await expect.poll(() => tiny.evaluate(savedConversations)).toBe(2);
  const again = await openWidget(site);
  expect(await again.texts('.msg.user')).toEqual(['For the hello model']);
});

test('a new conversation, a stored record that is not valid, and deleting the downloaded model', async ({ site }) => {
  watch(site);
  const tab = await openWidget(site);
  await send(tab, 'Remember this');
  await tab.click('.new');
  expect(await tab.count('.msg.user')).toBe(0);
  await tab.reload();
  await tab.click('.launcher');
  await ready(tab);
  expect(await tab.count('.msg.user')).toBe(0); // the old one is gone from storage too
  await send(tab, 'A fresh start');

  // A record that is not this code's (content that is not text) is dropped, not a reason for every send to fail.
  const damaged = await tab.evaluate(
    () =>
      new Promise<number>((resolve, reject) => {
        const open = indexedDB.open('hearth-chat');
        open.onsuccess = () => {
          const store = open.result.transaction('conversations', 'readwrite').objectStore('conversations');
          const req = store.getAllKeys();
          req.onsuccess = () => {
            for (const key of req.result) {
              store.put(
                { id: key, title: 'x', messages: [{ role: 'user', content: { not: 'text' } }], updatedAt: 1 },
                key,
              );
            }
            store.transaction.oncomplete = () => resolve(req.result.length);
          };
        };
        open.onerror = () => reject(open.error);
      }),
  );
  expect(damaged).toBe(1);
  await tab.reload();
  await tab.click('.launcher');
  await ready(tab);
  expect(await send(tab, 'Still here?')).toBe('Hello, world!');
  expect(await tab.texts('.msg.user')).toEqual(['Still here?']);

  const stored = () =>
    tab.evaluate(async () =>
      (
        (await (
          (document.querySelector('hearth-chat') as Widget).engine as {
            models: { list(): Promise<Array<{ name: string }>> };
          } | null
        )?.models.list()) ?? []
      )
        .map((m) => m.name)
        .sort(),
    );
  // The model, and the prompt state the page ships beside it.
  const both = ['qwen2-hello-crumb.hearth-state', 'qwen2-hello.gguf'];
  expect(await stored()).toEqual(both);
  await tab.click('.more');
  await tab.click('.forget');
  await expect.poll(() => tab.texts('.status')).toEqual([expect.stringContaining('deleted from this browser')]);
  // The next message downloads both again.
  expect(await send(tab, 'And now?')).toBe('Hello, world!');
  expect(await stored()).toEqual(both);
});

test("the size check counts every script the widget loads: what the browser fetched on open is the build's list", async ({
  site,
  baseURL,
}) => {
  watch(site);
  const since = (await served(baseURL!)).length;
  await openWidget(site);
  const fetched = [
    ...new Set(
      (await served(baseURL!, since)).filter((p) => p.startsWith('/widget/')).map((p) => p.slice('/widget/'.length)),
    ),
  ];
  const report = JSON.parse(readFileSync('dist/widget/size.json', 'utf8')) as {
    gzip_bytes: number;
    limit: number;
    files: Record<string, number>;
  };
  expect(fetched.sort()).toEqual(Object.keys(report.files).sort());
  const gzipped = fetched.reduce((n, f) => n + gzipSync(readFileSync(`dist/widget/${f}`), { level: 9 }).length, 0);
  expect(gzipped).toBe(report.gzip_bytes);
  expect(gzipped).toBeLessThanOrEqual(report.limit);
});

// Images: off unless the page asks (the images attribute), with the model's projector named beside it.
const VISION = {
  model: `/test-models/${PROJECTORS['gemma3-vision'].model}.gguf`,
  projector: '/test-models/gemma3-vision.mmproj.gguf',
  images: '',
  'max-tokens': '16',
};
const png = (name: string, seed: number): TestFile => ({ name, type: 'image/png', b64: b64(testPng(96, 96, seed)) });
const NOT_IMAGES: TestFile[] = [
  { name: 'notes.txt', type: 'text/plain', b64: b64(new TextEncoder().encode('rye, spelt, wheat')) },
  {
    name: 'logo.svg',
    type: 'image/svg+xml',
    b64: b64(
      new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned=1"><circle r="4"/></svg>'),
    ),
  },
  // An SVG that calls itself a PNG: taken by its bytes, not its name or type.
  {
    name: 'logo.png',
    type: 'image/png',
    b64: b64(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>')),
  },
];

/** Gives the widget these attributes (prompt-state removed: it is the hello model's). */
const imageAttrs = (tab: Tab, attrs: Record<string, string>) =>
  tab.evaluate((a) => {
    const widget = document.querySelector('hearth-chat')!;
    widget.removeAttribute('prompt-state');
    for (const [k, v] of Object.entries(a)) widget.setAttribute(k, v);
  }, attrs);

/** The widget-host page with these attributes. */
async function imageWidget(site: Site, attrs: Record<string, string>): Promise<Tab> {
  const tab = await site.tab('/e2e/widget-host.html');
  await imageAttrs(tab, attrs);
  return tab;
}

test('images (the images attribute): attached, pasted and dropped, thumbnails in the log, an answer; after a reload the thumbnails again and the image not encoded again', async ({
  site,
}) => {
  watch(site);
  const tab = await imageWidget(site, VISION);
  await tab.click('.launcher');
  await ready(tab);
  expect(await events(tab, 'hearth-error')).toEqual([]);
  expect(await tab.visible('form .attach')).toBe(true);

  expect(await putFiles(tab, WIDGET_COMPOSER, 'input', [png('loaf.png', 1)])).toBe(true);
  expect(await putFiles(tab, WIDGET_COMPOSER, 'paste', [png('crumb.png', 2)])).toBe(true);
  expect(await putFiles(tab, WIDGET_COMPOSER, 'drop', [png('rye.png', 3)])).toBe(true);
  await expect.poll(() => drawnThumbnails(tab, WIDGET_COMPOSER, '.pending .thumb')).toEqual([true, true, true]);
  // The × takes one back out.
  await tab.click('.pending .attachment:nth-child(2) .remove');
  await expect.poll(() => tab.count('.pending .thumb')).toBe(2);

  await tab.fill('textarea', 'Which bread is this?');
  await tab.press('textarea', 'Enter');
  await expect.poll(() => tab.count('.msg.assistant')).toBe(2); // the welcome, the answer
  await expect
    .poll(() =>
      tab.evaluate(
        () =>
          (document.querySelector('hearth-chat')!.shadowRoot!.querySelector('form .send') as HTMLButtonElement)
            .disabled,
      ),
    )
    .toBe(false);
  expect(await tab.count('.msg.error')).toBe(0);
  expect(await tab.visible('.pending')).toBe(false);
  expect(await tab.texts('.msg.user')).toEqual(['Which bread is this?']);
  await expect.poll(() => drawnThumbnails(tab, WIDGET_COMPOSER, '.msg.user .thumb')).toEqual([true, true]);
  expect(
    await tab.evaluate(() => document.querySelector('hearth-chat')!.shadowRoot!.querySelectorAll('img').length),
  ).toBe(0);
  await expect.poll(() => tab.evaluate(savedConversations)).toBe(1);

  // The images were kept with the conversation (Blobs in IndexedDB): drawn again after a reload, before the model
  // loads.
  await tab.reload();
  await imageAttrs(tab, VISION);
  await tab.click('.launcher');
  await expect.poll(() => drawnThumbnails(tab, WIDGET_COMPOSER, '.msg.user .thumb')).toEqual([true, true]);
  await ready(tab);
  expect(await events(tab, 'hearth-error')).toEqual([]);
  await recordTimings(tab);
  await send(tab, 'And what is it made of?');
  // The same bytes, sent again: the KV state of the images came back from IndexedDB, nothing encoded.
  const [last] = (await timings(tab)).slice(-1);
  expect(last).toMatchObject({ cache_source: 'indexeddb' });
  expect(last!.media_ms ?? 0).toBe(0);
  await expect.poll(() => tab.texts('.status')).toEqual([expect.stringContaining('restored from IndexedDB')]);
  expect(await tab.texts('.msg.user')).toEqual(['Which bread is this?', 'And what is it made of?']);
  expect(await tab.evaluate(() => window.seen.violations)).toEqual([]);
});

test('images: a file that is not an image is refused with a message and never sent; a failed send gives the text and the images back (engine fed by the test)', async ({
  site,
}) => {
  watch(site);
  const tab = await imageWidget(site, VISION);
  await feed(tab, 'Noted.');
  await tab.click('.launcher');
  await expect.poll(() => tab.visible('form .attach')).toBe(true);
  for (const how of ['paste', 'drop', 'input'] as const) {
    await tab.evaluate(
      () => void (document.querySelector('hearth-chat')!.shadowRoot!.querySelector('.status')!.textContent = ''),
    );
    await putFiles(tab, WIDGET_COMPOSER, how, NOT_IMAGES);
    await expect
      .poll(() => tab.texts('.status'))
      .toEqual([
        expect.stringMatching(
          /^Not attached: notes\.txt .*; logo\.svg .*; logo\.png is not a PNG, JPEG, GIF or BMP image\.$/,
        ),
      ]);
    expect(await tab.count('.pending .attachment')).toBe(0);
  }
  expect(await send(tab, 'Hi')).toBe('Noted.');
  expect(
    await tab.evaluate(() =>
      window.sentParams!.map((p) => (p.messages as Array<{ content: unknown }>).at(-1)!.content),
    ),
  ).toEqual(['Hi']);
  expect(await tab.evaluate(() => window.pwned)).toBeUndefined();

  // A send that fails: the text and the image come back to the composer.
  await tab.evaluate(() => {
    (document.querySelector('hearth-chat') as Widget).engine = {
      chat: {
        completions: {
          create: async () => {
            throw Object.assign(new Error('images are not read here'), {
              name: 'InvalidRequestError',
              code: 'images_not_supported',
            });
          },
        },
      },
    };
  });
  await putFiles(tab, WIDGET_COMPOSER, 'paste', [png('loaf.png', 1)]);
  await expect.poll(() => tab.count('.pending .thumb')).toBe(1);
  await tab.fill('textarea', 'What is this?');
  await tab.press('textarea', 'Enter');
  await expect.poll(() => tab.texts('.msg.error')).toEqual(['images are not read here']);
  expect(
    await tab.evaluate(
      () => (document.querySelector('hearth-chat')!.shadowRoot!.querySelector('textarea') as HTMLTextAreaElement).value,
    ),
  ).toBe('What is this?');
  await expect.poll(() => drawnThumbnails(tab, WIDGET_COMPOSER, '.pending .thumb')).toEqual([true]);
  expect(await tab.texts('.msg.user')).toEqual(['Hi']);
  // Sent again, the image goes with the text (the test's engine sees its part; the file itself does not survive JSON).
  await feed(tab, 'A loaf.');
  await tab.press('textarea', 'Enter');
  await expect.poll(() => tab.evaluate(() => window.sentParams!.length)).toBe(1);
  expect(
    await tab.evaluate(() => (window.sentParams![0]!.messages as Array<{ content: unknown }>).at(-1)!.content),
  ).toEqual([
    { type: 'image_url', image_url: { url: {} } },
    { type: 'text', text: 'What is this?' },
  ]);
  expect(await tab.count('.pending .attachment')).toBe(0);
});

test('without the images attribute: no attach button, and a pasted or dropped image is not attached', async ({
  site,
}) => {
  watch(site);
  const tab = await site.tab('/e2e/widget-host.html');
  await feed(tab, 'Noted.');
  await tab.click('.launcher');
  await expect.poll(() => tab.visible('textarea')).toBe(true);
  expect(await tab.count('.attach, input[type=file], .pending')).toBe(0);
  expect(await putFiles(tab, WIDGET_COMPOSER, 'paste', [png('loaf.png', 1)])).toBe(false);
  expect(await putFiles(tab, WIDGET_COMPOSER, 'drop', [png('loaf.png', 1)])).toBe(false);
  expect(await send(tab, 'Hi')).toBe('Noted.');
  expect(
    await tab.evaluate(() =>
      window.sentParams!.map((p) => (p.messages as Array<{ content: unknown }>).at(-1)!.content),
    ),
  ).toEqual(['Hi']);
  expect(await tab.count('.thumb')).toBe(0);
});
