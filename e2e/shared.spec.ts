// One engine for all tabs of a site (EngineOptions.shared): two pages in one browser context, as two tabs of one
// site. The first runs the engine, the second has no engine worker of its own; both chat; tabs with different models
// are each answered by their own; when the running tab closes, the other takes the engine over, a request in flight
// fails with a retryable error, and the conversation continues with its KV state from IndexedDB. Messages another
// page of the site forges on the channel cannot take the tabs over. Chromium and Firefox.
import { testPng } from '../test/fixtures/media.ts';
import { PROJECTORS } from '../test/fixtures/projectors.ts';
import { SYSTEM } from '../test/helpers.ts';
import { expect, test } from './fixtures.ts';
import { savedConversations } from './kv.ts';
import { countWorkers, type Site, type Tab, workersStarted as workers } from './site.ts';

type Page = Tab;

async function openTab(site: Site): Promise<Page> {
  const page = await site.tab('/e2e/harness.html');
  await page.waitFor(() => window.hearthReady);
  await page.evaluate(async () => {
    window.engine = await window.hearth.createEngine({ threads: 2, shared: 'e2e' });
  });
  return page;
}

const shared = (page: Page) => page.evaluate(async () => (await window.engine.info()).shared);

const load = (page: Page, model: string) =>
  page.evaluate(async (url) => {
    const phases: string[] = [];
    const info = await window.engine.load(url, { nCtx: 2048, onProgress: (p) => phases.push(p.phase) });
    return { name: info.name, phases: [...new Set(phases)] };
  }, `/test-models/${model}.gguf`);

type Msg = { role: 'system' | 'user' | 'assistant'; content: string };

const ask = (page: Page, messages: Msg[], conversation_id?: string) =>
  page.evaluate(
    async ({ messages, conversation_id }) => {
      const r = await window.engine.chat.completions.create({
        messages,
        temperature: 0,
        max_tokens: 12,
        conversation_id,
      });
      return {
        text: r.choices[0]!.message.content!,
        source: r.timings!.cache_source,
        cached: r.usage.prompt_tokens_details.cached_tokens,
      };
    },
    { messages, conversation_id },
  );

/** Starts a long streamed answer in the tab and waits for its first chunks; streamEnd() tells how it ended. */
async function streamLong(page: Page) {
  await page.evaluate(() => {
    const w = window as unknown as { chunks: number; streamed: Promise<unknown> };
    w.chunks = 0;
    w.streamed = (async () => {
      const stream = await window.engine.chat.completions.create({
        messages: [{ role: 'user', content: 'Tell me a long story.' }],
        temperature: 0,
        max_tokens: 2000,
        stream: true,
      });
      try {
        for await (const _ of stream) w.chunks++;
        return null;
      } catch (e) {
        const err = e as import('../src/index.ts').HearthError;
        return { name: err.name, code: err.code, details: err.details };
      }
    })();
  });
  await page.waitFor(() => (window as unknown as { chunks: number }).chunks >= 3);
}

const streamEnd = (page: Page) => page.evaluate(() => (window as unknown as { streamed: Promise<unknown> }).streamed);

test('tabs share one engine: the model is loaded once, both chat, each on its own model; closing the running tab moves the engine and the conversation continues', async ({
  site,
}) => {
  countWorkers(site);
  const a = await openTab(site);
  const b = await openTab(site);
  expect(await shared(a)).toEqual({ name: 'e2e', leader: true, tabs: 2 });
  expect(await shared(b)).toEqual({ name: 'e2e', leader: false, tabs: 2 });
  expect(await workers(a)).toBeGreaterThan(0);
  expect(await workers(b)).toBe(0);

  // Loaded once: the second tab's load of the same model is answered at once, without reading it again.
  const loadedA = await load(a, 'qwen2-tiny');
  expect(loadedA.phases).toContain('load');
  const loadedB = await load(b, 'qwen2-tiny');
  expect(loadedB).toEqual({ name: loadedA.name, phases: [] });

  // Both chat at once, answered as one tab alone is (greedy decoding; batched together in the one engine).
  const question: Msg[] = [{ role: 'user', content: 'Tell me about the sea.' }];
  const alone = await ask(a, question);
  const conversation: Msg[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'Name a bread.' },
  ];
  const [fromA, fromB] = await Promise.all([ask(a, question), ask(b, conversation, 'b-chat')]);
  expect(fromA.text).toBe(alone.text);
  expect(fromB.text.length).toBeGreaterThan(0);
  await expect.poll(() => b.evaluate(savedConversations)).toBe(1); // the engine in tab a saved b's conversation

  // Tab b switches to another model; each tab is still answered by its own.
  await load(b, 'qwen2-hello');
  expect((await ask(b, [{ role: 'user', content: 'Hi' }])).text).toBe('Hello, world!');
  expect((await ask(a, question)).text).toBe(alone.text);
  expect((await ask(b, [{ role: 'user', content: 'Hi' }])).text).toBe('Hello, world!');
  await load(b, 'qwen2-tiny');

  // A long answer streams to tab b while tab a, which runs the engine, closes.
  await streamLong(b);
  await a.close();
  expect(await streamEnd(b)).toEqual({ name: 'EngineError', code: 'leader_gone', details: { retryable: true } });

  // Tab b runs the engine now; sent again, requests are answered as before, its model loaded again from the store
  // and its conversation's KV state restored from IndexedDB instead of read again.
  await expect.poll(() => shared(b)).toEqual({ name: 'e2e', leader: true, tabs: 1 });
  expect(await workers(b)).toBeGreaterThan(0);
  expect((await ask(b, question)).text).toBe(alone.text);
  conversation.push({ role: 'assistant', content: fromB.text }, { role: 'user', content: 'And a river?' });
  const continued = await ask(b, conversation, 'b-chat');
  expect(continued.source).toBe('indexeddb');
  expect(continued.cached).toBeGreaterThan(100);
});

// A crashed tab says nothing (no pagehide); the browser releases its locks, and that is how the others notice. The
// crash is simulated by dropping the tab's goodbye, then closing it: a real renderer crash (CDP Page.crash) takes
// both tabs down here, since Chromium puts same-site tabs in one process.
test('a tab that vanishes without a word is noticed: its requests stop, and when it ran the engine another tab takes over (crash simulated)', async ({
  site,
}) => {
  const crash = async (page: Page) => {
    await page.evaluate(() => {
      const post = BroadcastChannel.prototype.postMessage;
      BroadcastChannel.prototype.postMessage = function (this: BroadcastChannel, message: { kind?: string }) {
        if (message?.kind !== 'bye') post.call(this, message);
      };
    });
    await page.close();
  };
  const a = await openTab(site);
  const b = await openTab(site);
  await load(a, 'qwen2-tiny');
  await load(b, 'qwen2-tiny');
  await streamLong(b);
  await crash(b);
  // Tab a needs another model: that waits for b's request on this one, which would never end had it not been noticed.
  await load(a, 'qwen2-hello');
  expect((await ask(a, [{ role: 'user', content: 'Hi' }])).text).toBe('Hello, world!');

  const c = await openTab(site);
  await load(c, 'qwen2-tiny');
  await streamLong(c);
  await crash(a);
  // Sent before c has noticed: a never took it, so it waits for the next leader (c itself) instead of failing.
  const sentAtOnce = ask(c, [{ role: 'user', content: 'Hi' }]);
  expect(await streamEnd(c)).toEqual({ name: 'EngineError', code: 'leader_gone', details: { retryable: true } });
  expect((await sentAtOnce).text.length).toBeGreaterThan(0);
  await expect.poll(() => shared(c)).toEqual({ name: 'e2e', leader: true, tabs: 1 });
  expect((await ask(c, [{ role: 'user', content: 'Hi' }])).text.length).toBeGreaterThan(0);
});

/** Posts on the tabs' channel from a page of the site that runs no engine: what any script of the origin can do. */
async function forge(site: Site, messages: Array<Record<string, unknown>>, holdTermLock?: string) {
  const page = await site.tab('/e2e/harness.html');
  await page.waitFor(() => window.hearthReady);
  await page.evaluate(
    async ({ messages, holdTermLock }) => {
      const names = window.hearthWire.lockNames('e2e');
      if (holdTermLock) {
        // A page that plays a leader to the end: it holds a term's lock, announces it, and never answers.
        await new Promise<void>(
          (held) =>
            void navigator.locks.request(names.term(holdTermLock), () => {
              held();
              return new Promise(() => {});
            }),
        );
      }
      const channel = new BroadcastChannel(names.channel);
      for (const m of messages) channel.postMessage(window.hearthWire.stamp(m as never));
    },
    { messages, holdTermLock },
  );
  return page;
}

test('messages forged on the channel by another page cannot stall or fool the tabs: a leader without its lock is ignored, a silent one times out', async ({
  site,
}) => {
  const a = await openTab(site);
  const b = await openTab(site);
  await load(a, 'qwen2-hello');
  await load(b, 'qwen2-hello');
  // A forged announcement (no lock behind it), a goodbye in the real leader's name, answers to calls nobody made, and
  // messages of another protocol version and build. Before, the first alone left b's requests hanging.
  const forger = await forge(site, [
    { kind: 'leader', term: 'forged', ready: true },
    { kind: 'result', term: 'forged', tab: 'x', id: 1, result: { ok: true, value: 'forged' } },
  ]);
  expect((await ask(b, [{ role: 'user', content: 'Hi' }])).text).toBe('Hello, world!');
  await forger.evaluate(async () => {
    const { lockNames, stamp } = window.hearthWire;
    const channel = new BroadcastChannel(lockNames('e2e').channel);
    const term = await new Promise<string>((resolve) => {
      channel.onmessage = (e) => e.data.kind === 'leader' && e.data.ready && resolve(e.data.term);
      channel.postMessage(stamp({ kind: 'hello' }));
    });
    channel.postMessage(stamp({ kind: 'bye', tab: 'x', term }));
    channel.postMessage({ ...stamp({ kind: 'leader', term: 'old', ready: true }), v: 1 });
    channel.postMessage({ ...stamp({ kind: 'leader', term: 'other-build', ready: true }), build: 'another-deploy' });
  });
  expect((await ask(b, [{ role: 'user', content: 'Hi' }])).text).toBe('Hello, world!');
  expect(await shared(b)).toMatchObject({ leader: false, tabs: 2 });

  // A page that holds a term's lock and announces it, then never answers: b's next request ends with a typed,
  // retryable error within seconds instead of waiting for ever; once that page is gone, b is served again.
  const silent = await forge(site, [{ kind: 'leader', term: 'silent', ready: true }], 'silent');
  // b believes the announcement once it has checked the lock (asynchronously): a request sent before that goes to a,
  // and one in flight when b switches fails with 'leader_gone'. Like a user, the test sends again until the request
  // goes to the silent page.
  const failed = await b.evaluate(async () => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const t0 = performance.now();
      try {
        await window.engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
      } catch (e) {
        const err = e as import('../src/index.ts').HearthError;
        if (err.code === 'leader_gone') continue;
        return { name: err.name, code: err.code, details: err.details, seconds: (performance.now() - t0) / 1000 };
      }
      await new Promise((wait) => setTimeout(wait, 200));
    }
    return null;
  });
  expect(failed).toMatchObject({ name: 'EngineError', code: 'leader_timeout', details: { retryable: true } });
  expect(failed!.seconds).toBeLessThan(30);
  await silent.close();
  await forger.close();
  await expect
    .poll(async () => (await ask(b, [{ role: 'user', content: 'Hi' }]).catch(() => ({ text: null }))).text)
    .toBe('Hello, world!');
});

test('an image sent from a tab without the engine is read by the leader, and the follow-up from the other tab reuses it without encoding', async ({
  site,
}) => {
  const a = await openTab(site);
  const b = await openTab(site);
  const withProjector = (page: Page) =>
    page.evaluate(
      async ({ model, mmproj }) => {
        await window.engine.load(model, { nCtx: 2048, projector: mmproj });
        return (await window.engine.info()).input;
      },
      {
        model: `/test-models/${PROJECTORS['gemma3-vision'].model}.gguf`,
        mmproj: '/test-models/gemma3-vision.mmproj.gguf',
      },
    );
  expect(await withProjector(a)).toContain('image');
  expect(await withProjector(b)).toContain('image');
  const askImage = (page: Page, png: string, followUp: string | null) =>
    page.evaluate(
      async ({ png, followUp }) => {
        const file = new File([Uint8Array.from(atob(png), (c) => c.charCodeAt(0))], 'photo.png', { type: 'image/png' });
        const messages: import('../src/types.ts').ChatMessage[] = [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: file } },
            ],
          },
        ];
        if (followUp) messages.push({ role: 'assistant', content: followUp }, { role: 'user', content: 'And?' });
        const r = await window.engine.chat.completions.create({
          messages,
          temperature: 0,
          max_tokens: 8,
          conversation_id: 'shared-image',
        });
        return {
          text: r.choices[0]!.message.content!,
          mediaMs: r.timings!.media_ms ?? 0,
          source: r.timings!.cache_source,
        };
      },
      { png, followUp },
    );
  const png = Buffer.from(testPng(96, 96, 9)).toString('base64');
  const first = await askImage(b, png, null); // b has no engine: the File crosses the channel to a's worker
  expect(first.mediaMs).toBeGreaterThan(0);
  const next = await askImage(a, png, first.text);
  expect(next.source).toBe('memory');
  expect(next.mediaMs).toBe(0);
});
