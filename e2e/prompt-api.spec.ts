// The Prompt API in each browser, on what the web-platform-tests do not ask for: a session kept across a page reload
// (its messages in IndexedDB, its KV state the engine's conversation) answers as the live session would have, from
// its saved state; destroy() deletes what was kept.
import { expect, openEngine, test } from './fixtures.ts';

declare global {
  interface Window {
    LM: ReturnType<typeof import('../src/prompt-api/prompt-api.ts').languageModelClass>;
  }
}

/** A system prompt long enough to be kept (the cache keeps conversations from 100 tokens). */
const SYSTEM = `You are the help desk of a bakery. ${'We bake rye, spelt and wheat bread every morning. '.repeat(12)}`;

/** The page's LanguageModel over its engine (window.engine), on the test model. */
async function promptApi(harness: Parameters<typeof openEngine>[0]) {
  await openEngine(harness);
  await harness.tap(5, 5); // a user's click: a first download needs one (Playwright's evaluate gives one, WebDriver's not)
  await harness.evaluate(() => {
    window.LM = window.hearthPromptApi.languageModelClass({
      engine: window.engine,
      model: '/test-models/qwen2-hello.gguf',
      load: { nCtx: 1024 },
    });
  });
}

test('a session with hearth.sessionId is back after a reload, answering as the live one from its saved state; destroy() forgets it', async ({
  harness,
}) => {
  await promptApi(harness);
  const live = await harness.evaluate(async (system) => {
    const session = await window.LM.create({
      samplingMode: 'most-predictable',
      initialPrompts: [{ role: 'system', content: system }],
      hearth: { sessionId: 'e2e' },
    });
    const first = await session.prompt('Name a bread.');
    const usage = session.contextUsage;
    const next = await (await session.clone()).prompt('And a river?'); // what the kept session would answer
    await window.engine.cache.flush();
    return { first, usage, next };
  }, SYSTEM);
  expect(live.usage).toBeGreaterThan(100);

  await harness.reload();
  await promptApi(harness);
  const restored = await harness.evaluate(async () => {
    const session = await window.LM.create({ samplingMode: 'most-predictable', hearth: { sessionId: 'e2e' } });
    const usage = session.contextUsage;
    const before = (await window.engine.cache.stats()).hits.indexeddb;
    const next = await session.prompt('And a river?');
    const after = (await window.engine.cache.stats()).hits.indexeddb;
    session.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const fresh = await window.LM.create({ hearth: { sessionId: 'e2e' } });
    return { usage, next, fromSaved: after - before, freshUsage: fresh.contextUsage };
  });
  expect(restored).toEqual({ usage: live.usage, next: live.next, fromSaved: 1, freshUsage: 0 });
});
