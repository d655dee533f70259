// The soak: many turns in four conversations at once — three <hearth-chat> widgets (one per storage key, each in its
// own tab) and one page on the public API, all on the site's one shared engine — with random stops, page reloads and
// closed tabs (the engine's leader among them). Checked against a log the test keeps itself: every message the
// visitor sent and every finished answer is in the widget after a fresh open; the API conversation answers as a cold
// engine in Node does (log-probabilities); the engine's wasm heap and the tabs' JS heap stay flat; IndexedDB stays
// within its budget; no page error. `npm run soak [-- --turns N]` (default 1,000); CI runs SOAK_TURNS (60).
import { COMPARABLE, PROMPT_EFFECT } from '../test/compare.ts';
import { createNodeEngine } from '../src/node.ts';
import { seeded } from '../test/fixtures/random.ts';
import { expectSameAnswer, modelPath } from '../test/helpers.ts';
import { expect, test } from './fixtures.ts';
import type { Tab } from './site.ts';

const TURNS = Number(process.env.HEARTH_SOAK_TURNS) || 60;
const SEED = Number(process.env.HEARTH_SOAK_SEED) || 41;
const MODEL = '/test-models/qwen2-hello.gguf';
const STATE = '/test-models/qwen2-hello-crumb.hearth-state';
/** Cached against cold with up to four conversations decoded together and the context resized under them: seen up to
 * 2.1e-3 in a 1,000-turn run (LOGPROB_TOLERANCE, 2e-3, is for requests alone or four fixed ones). Half of
 * PROMPT_EFFECT: another question, or a wrong state, moves these log-probabilities by more. */
const TOLERANCE = PROMPT_EFFECT / 2;
/** The API conversation starts over every so many turns (the cold engine reads it whole each time). */
const API_TURNS = 6;

type Widget = HTMLElement & { send(text: string): Promise<string> };
type Msg = { role: 'system' | 'user' | 'assistant'; content: string };

interface Turn {
  user: string;
  /** The answer the widget gave back; `stopped` when the visitor stopped it. */
  answer: string;
  stopped: boolean;
}

test(`soak: ${TURNS} turns in four conversations on one shared engine, with stops, reloads and closed tabs: nothing lost, answers as cold, heaps flat`, async ({
  site,
}) => {
  test.setTimeout(120_000 + TURNS * 3_000);
  const { next: rand, chance } = seeded(SEED);
  const problems: string[] = [];
  const counts = { turns: 0, stops: 0, stopped: 0, reloads: 0, closed: 0, leaderClosed: 0, retried: 0, spotChecks: 0 };

  const open = async (path: string) => {
    const tab = await site.tab(path);
    tab.playwright!.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    tab.playwright!.on('console', (m) => {
      // A failed fetch is said by URL below (the browser's own message does not name it).
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource'))
        problems.push(`console.error: ${m.text()}`);
    });
    tab.playwright!.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) problems.push(`HTTP ${r.status()}: ${r.url()}`);
    });
    return tab;
  };
  // The widgets: a storage key each, set before the widget opens (send() opens it).
  const widgets: Array<{ key: string; tab: Tab; log: Turn[] }> = [];
  const setKey = (tab: Tab, key: string) =>
    tab.evaluate((k) => document.querySelector('hearth-chat')!.setAttribute('storage-key', k), key);
  const openWidget = async (key: string) => {
    const tab = await open('/e2e/widget-host.html');
    await setKey(tab, key);
    return tab;
  };
  for (const key of ['s1', 's2', 's3']) widgets.push({ key, tab: await openWidget(key), log: [] });
  // The API page joins the same shared engine and loads what the widgets load (the same model, the same options).
  const startApi = async (tab: Tab) => {
    await tab.waitFor(() => window.hearthReady);
    await tab.evaluate(
      async ({ model, state }) => {
        window.engine = await window.hearth.createEngine({ shared: 'hearth-chat' });
        await window.engine.load(new URL(model, location.href).href, {
          promptState: new URL(state, location.href).href,
        });
      },
      { model: MODEL, state: STATE },
    );
    return tab;
  };
  const openApi = async () => startApi(await open('/e2e/harness.html'));
  let api = await openApi();
  let apiMessages: Msg[] = [];
  let apiConversation = 0;
  const cold = await createNodeEngine({ cache: { persistent: false, conversations: false, systemPrompt: false } });
  await cold.load({ path: modelPath('qwen2-hello') }, { nCtx: 2048, nParallel: 1 });

  const heaps: Array<{ turn: number; wasm: number; js: number; idb: number; budget: number }> = [];
  const measure = async () => {
    const info = await api.evaluate(() => window.engine.info());
    const stats = await api.evaluate(() => window.engine.cache.stats());
    let js = 0;
    for (const tab of [api, ...widgets.map((w) => w.tab)]) {
      const cdp = await tab.playwright!.context().newCDPSession(tab.playwright!);
      await cdp.send('HeapProfiler.collectGarbage');
      js += (await cdp.send('Runtime.getHeapUsage')).usedSize;
      await cdp.detach();
    }
    heaps.push({ turn: counts.turns, wasm: info.wasmHeap!.inUse, js, idb: stats.bytes, budget: stats.budgetBytes });
  };

  /** One widget turn: maybe stopped a moment in; a send that fails gives the text back, and is sent again. */
  const widgetTurn = async (w: (typeof widgets)[number], text: string, stop: boolean) => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const out = await w.tab.evaluate(
        async ({ text, stop, delay }) => {
          const widget = document.querySelector('hearth-chat') as Widget;
          let stopped = false;
          const heard = (e: Event) => {
            const d = (e as CustomEvent).detail as { role: string; stopped?: boolean };
            if (d.role === 'assistant') stopped = d.stopped === true;
          };
          document.addEventListener('hearth-message', heard);
          const stopper = stop
            ? setInterval(() => {
                const button = widget.shadowRoot!.querySelector<HTMLButtonElement>('button.stop');
                if (button && !button.hidden && Date.now() > started + delay) button.click();
              }, 5)
            : undefined;
          const started = Date.now();
          try {
            return { answer: await widget.send(text), stopped, error: null, kept: null };
          } catch (e) {
            const input = widget.shadowRoot!.querySelector('textarea') as HTMLTextAreaElement;
            return { answer: '', stopped, error: (e as Error).message, kept: input.value };
          } finally {
            clearInterval(stopper);
            document.removeEventListener('hearth-message', heard);
          }
        },
        { text, stop, delay: Math.floor(rand() * 20) },
      );
      if (out.error === null) {
        w.log.push({ user: text, answer: out.answer, stopped: out.stopped });
        if (out.stopped) counts.stopped++;
        return;
      }
      // Nothing the visitor wrote is lost: the text is back in the box.
      expect(out.kept, `a failed send (${out.error}) kept the text`).toBe(text);
      counts.retried++;
    }
    throw new Error(`${w.key}: "${text}" failed three times`);
  };

  const apiTurn = async (text: string, stop: boolean) => {
    if (apiMessages.length >= 1 + 2 * API_TURNS || !apiMessages.length) {
      apiMessages = [{ role: 'system', content: `You answer briefly. Conversation ${++apiConversation}.` }];
    }
    const messages: Msg[] = [...apiMessages, { role: 'user', content: text }];
    const out = await api.evaluate(
      async ({ messages, id, stop, comparable }) => {
        const controller = new AbortController();
        if (stop) setTimeout(() => controller.abort(), 2);
        try {
          const r = await window.engine.chat.completions.create({
            messages,
            temperature: 0,
            max_tokens: 8,
            conversation_id: id,
            signal: controller.signal,
            ...comparable,
          });
          return { r, error: null };
        } catch (e) {
          const err = e as Error & { code?: string };
          return { r: null, error: `${err.name}(${err.code}): ${err.message}` };
        }
      },
      { messages, id: `soak-${apiConversation}`, stop, comparable: COMPARABLE },
    );
    if (!out.r) {
      // A stop, or the engine's leader gone mid-request (the other tabs' closing): the turn is not kept.
      expect(out.error).toMatch(/^(AbortError\(aborted\)|EngineError\((leader_gone|terminated|worker_lost)\))/);
      return;
    }
    if (apiMessages.length > 1 && rand() < 0.5) {
      // Resumed from the engine's cache (memory or IndexedDB): the same as a cold engine reading it all.
      expectSameAnswer(
        out.r,
        await cold.chat.completions.create({ messages, temperature: 0, max_tokens: 8, ...COMPARABLE }),
        TOLERANCE,
      );
      counts.spotChecks++;
    }
    apiMessages = [...messages, { role: 'assistant', content: out.r.choices[0]!.message.content ?? '' }];
  };

  // Rounds: each conversation takes a turn at once; between rounds, a reload or a closed tab now and then.
  for (let round = 0; counts.turns < TURNS; round++) {
    const turns = [
      ...widgets.map((w, i) => () => {
        const stop = chance(0.1);
        if (stop) counts.stops++;
        return widgetTurn(w, `Round ${round}, widget ${i + 1}: which bread for soup?`, stop);
      }),
      () => {
        const stop = chance(0.1);
        if (stop) counts.stops++;
        return apiTurn(`Round ${round}: name a river.`, stop);
      },
    ];
    await Promise.all(turns.map((t) => t()));
    counts.turns += turns.length;
    // At turn ~100 of 1,000 (a tenth), and after the last round. The engine starts again where its leader closed:
    // what is measured is the engine running then; a leak grows over the many rounds one engine runs.
    if (round === Math.max(1, Math.round(TURNS / 40)) || counts.turns >= TURNS) await measure();
    if (counts.turns >= TURNS) break;
    // About 5% of turns each: a tab reloaded, a tab closed and opened again. The short form does each at least once,
    // and its first close is the first tab's, which took the engine's lead (the others follow it).
    const reload = chance(0.2) || round === 2;
    const close = chance(0.2) || round === 4;
    if (reload) {
      counts.reloads++;
      const which = Math.floor(rand() * 4);
      const tab = which < 3 ? widgets[which]!.tab : api;
      await tab.reload();
      if (which < 3) await setKey(tab, widgets[which]!.key);
      else await startApi(tab);
    }
    if (close) {
      counts.closed++;
      const which = counts.closed === 1 ? 0 : Math.floor(rand() * 4);
      if (counts.closed === 1) counts.leaderClosed++;
      if (which < 3) {
        await widgets[which]!.tab.close();
        widgets[which]!.tab = await openWidget(widgets[which]!.key);
      } else {
        await api.close();
        api = await openApi();
      }
    }
  }
  await cold.unload();

  // Every turn is in each widget's conversation, opened afresh.
  for (const w of widgets) {
    await w.tab.close();
    w.tab = await openWidget(w.key);
    await w.tab.click('.launcher');
    await expect.poll(() => w.tab.count('.msg.user'), { timeout: 60_000 }).toBe(w.log.length);
    expect(await w.tab.texts('.msg.user')).toEqual(w.log.map((t) => t.user));
    const shown = (await w.tab.texts('.msg.assistant')).slice(1); // after the welcome
    expect(shown).toHaveLength(w.log.length);
    for (const [i, t] of w.log.entries()) {
      if (!t.stopped) expect(shown[i], `${w.key} turn ${i}`).toBe(t.answer);
      else expect(shown[i]).toContain(t.answer.trim());
    }
  }
  const [mid, end] = [heaps[0]!, heaps.at(-1)!];
  console.log(
    `[soak] ${JSON.stringify(counts)}; turn ${mid.turn}: wasm heap ${mb(mid.wasm)}, JS heap ${mb(mid.js)}, IndexedDB ${mb(mid.idb)}; ` +
      `turn ${end.turn}: wasm heap ${mb(end.wasm)}, JS heap ${mb(end.js)}, IndexedDB ${mb(end.idb)} of a ${mb(end.budget)} budget`,
  );
  expect(end.wasm).toBeLessThan(mid.wasm * 1.2 + 2 ** 20);
  expect(end.js).toBeLessThan(mid.js * 1.2 + 2 ** 20);
  expect(end.idb).toBeLessThanOrEqual(end.budget);
  expect(problems).toEqual([]);
});

const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MB`;
