// The remote backend (createEngine's backend / fallback { remote }) in the browser against a real OpenAI-compatible
// server: llama-server built natively from the pinned llama.cpp (npm run build:server), serving the test models on
// 127.0.0.1. The checks the wasm backend has — the answer and its log-probabilities (compared with the wasm engine's on
// the same page), streams, abort, tools, json_schema, embeddings, typed errors — plus the fallback policy, nothing sent
// to a server unless one was configured, and a server that goes away mid-stream.
import { startLlamaServer, type LlamaServer } from '../test/fixtures/llama-server.ts';
import { modelPath } from '../test/helpers.ts';
import { LOGPROB_TOLERANCE } from '../test/compare.ts';
import { expect, openEngine, test } from './fixtures.ts';
import type { Tab } from './site.ts';

let chat: LlamaServer; // qwen2-hello: answers "Hello, world!"
let tiny: LlamaServer; // qwen2-tiny: random weights, long answers, forced tool calls and schemas
let embed: LlamaServer; // qwen3-embed with --embeddings
let tool: LlamaServer; // qwen2-tool: calls get_weather on every prompt

test.beforeAll(async () => {
  [chat, tiny, embed, tool] = await Promise.all([
    startLlamaServer({ model: modelPath('qwen2-hello') }),
    startLlamaServer({ model: modelPath('qwen2-tiny') }),
    startLlamaServer({ model: modelPath('qwen3-embed'), args: ['--embeddings'] }),
    startLlamaServer({ model: modelPath('qwen2-tool') }),
  ]);
});
test.afterAll(async () => {
  await Promise.all([chat, tiny, embed, tool].map((s) => s?.stop()));
});

type Harness = Parameters<typeof openEngine>[0];

/** window.engine on wasm, and window.remote over the server at `baseURL`, loaded. */
async function openBoth(harness: Harness, baseURL: string, model = 'qwen2-hello') {
  await openEngine(harness, { backend: 'wasm' });
  return harness.evaluate(
    async ({ baseURL, model }) => {
      const remote = await window.hearth.createEngine({ backend: { remote: { baseURL, model } } });
      (globalThis as unknown as { remote: typeof remote }).remote = remote;
      const loaded = await remote.load(model); // the source is not fetched: a server has its model
      return { loaded, info: await remote.info() };
    },
    { baseURL, model },
  );
}

test('answers through the server as the wasm engine does: the same greedy tokens and top log-probabilities', async ({
  harness,
}) => {
  const { loaded, info } = await openBoth(harness, chat.baseURL);
  expect(loaded).toMatchObject({ name: 'qwen2-hello', architecture: 'remote' });
  expect(info).toMatchObject({
    backend: 'remote',
    remote: { baseURL: chat.baseURL, model: 'qwen2-hello' },
    selection: { requested: 'remote' },
  });
  const out = await harness.evaluate(async () => {
    await window.engine.load('/test-models/qwen2-hello.gguf');
    const params = {
      messages: [{ role: 'user' as const, content: 'Hi' }],
      temperature: 0,
      max_tokens: 6,
      logprobs: true,
      top_logprobs: 5,
    };
    const remote = (globalThis as unknown as { remote: typeof window.engine }).remote;
    return {
      wasm: await window.engine.chat.completions.create(params),
      remote: await remote.chat.completions.create(params),
    };
  });
  expect(out.remote.choices[0]!.message).toMatchObject({
    role: 'assistant',
    content: out.wasm.choices[0]!.message.content,
    refusal: null,
  });
  // llama-server counts the end-of-turn token in completion_tokens (as wllama, its code); Hearth does not.
  expect(out.remote.usage).toMatchObject({
    prompt_tokens: out.wasm.usage.prompt_tokens,
    completion_tokens: out.wasm.usage.completion_tokens + 1,
  });
  const [a, b] = [out.wasm.choices[0]!.logprobs!.content!, out.remote.choices[0]!.logprobs!.content!];
  expect(b.map((t) => t.token)).toEqual(a.map((t) => t.token));
  a.forEach((t, i) => {
    const theirs = new Map(b[i]!.top_logprobs.map((x) => [x.token, x.logprob]));
    for (const top of t.top_logprobs.slice(0, 3)) {
      expect(Math.abs(top.logprob - theirs.get(top.token)!)).toBeLessThan(LOGPROB_TOLERANCE);
    }
  });
  expect(out.remote.timings).toMatchObject({ predicted_n: out.remote.usage.completion_tokens });
});

test('streams with include_usage; an abort ends the stream and the next request answers', async ({ harness }) => {
  await openBoth(harness, tiny.baseURL, 'qwen2-tiny');
  const out = await harness.evaluate(async () => {
    const remote = (globalThis as unknown as { remote: typeof window.engine }).remote;
    const chunks = [];
    for await (const c of await remote.chat.completions.create({
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      max_tokens: 5,
      stream_options: { include_usage: true },
    }))
      chunks.push(c);
    const stop = new AbortController();
    let seen = 0;
    let aborted = '';
    try {
      for await (const _ of await remote.chat.completions.create({
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
        max_tokens: 1000,
        signal: stop.signal,
      })) {
        if (++seen === 3) stop.abort();
      }
    } catch (err) {
      aborted = (err as Error).name;
    }
    const after = await remote.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 });
    return { chunks, seen, aborted, after: after.usage.completion_tokens };
  });
  const [finish, usage] = out.chunks.slice(-2);
  expect(finish!.choices[0]!.finish_reason).toBe('length');
  expect(usage).toMatchObject({ choices: [], usage: { completion_tokens: 5 } });
  expect(out.chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  expect(out.aborted).toBe('AbortError');
  // Chunks already on their way when the abort came still arrive (the server streams ~1,000 tokens a second); then it
  // ends.
  expect(out.seen).toBeLessThan(200);
  expect(out.after).toBe(3);
});

test('tool calls come back as the wasm engine gives them, streamed or not; json_schema replies follow the schema', async ({
  harness,
}) => {
  await openBoth(harness, tool.baseURL, 'qwen2-tool');
  const out = await harness.evaluate(async (tinyURL) => {
    await window.engine.load('/test-models/qwen2-tool.gguf');
    const remote = (globalThis as unknown as { remote: typeof window.engine }).remote;
    const weather = {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        parameters: {
          type: 'object',
          properties: { days: { type: 'integer', minimum: 1, maximum: 9 } },
          required: ['days'],
        },
      },
    };
    // 'auto': the model calls the tool of itself (a grammar for 'required' is each side's own; llama-server's lets a
    // random model ramble before its call).
    const params = {
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
      tools: [weather],
      tool_choice: 'auto' as const,
      temperature: 0,
    };
    const calls = async (engine: typeof window.engine) => {
      const plain = (await engine.chat.completions.create(params)).choices[0]!;
      const streamed: Record<number, { name: string; arguments: string }> = {};
      for await (const c of await engine.chat.completions.create({ ...params, stream: true })) {
        for (const d of c.choices[0]?.delta.tool_calls ?? []) {
          const call = (streamed[d.index] ??= { name: '', arguments: '' });
          call.name += d.function.name ?? '';
          call.arguments += d.function.arguments;
        }
      }
      return {
        finish: plain.finish_reason,
        calls: plain.message.tool_calls!.map((c) => c.function),
        streamed: Object.values(streamed),
      };
    };
    const tiny = await window.hearth.createEngine({ backend: { remote: { baseURL: tinyURL, model: 'qwen2-tiny' } } });
    await tiny.load('qwen2-tiny');
    const schema = {
      type: 'object',
      properties: { unit: { enum: ['celsius', 'fahrenheit'] }, days: { type: 'integer', minimum: 1, maximum: 9 } },
      required: ['unit', 'days'],
      additionalProperties: false,
    };
    const json = await tiny.chat.completions.create({
      messages: [{ role: 'user', content: 'Weather?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema } },
      temperature: 0.7,
      seed: 1,
      max_tokens: 200,
    });
    return { wasm: await calls(window.engine), remote: await calls(remote), json: json.choices[0]!.message.content };
  }, tiny.baseURL);
  expect(out.remote.finish).toBe('tool_calls');
  expect(out.remote.calls).toEqual([{ name: 'get_weather', arguments: expect.any(String) }]);
  expect(JSON.parse(out.remote.calls[0]!.arguments)).toEqual({ days: 2 });
  expect(out.remote.calls.map((c) => ({ ...c, arguments: JSON.parse(c.arguments) }))).toEqual(
    out.wasm.calls.map((c) => ({ ...c, arguments: JSON.parse(c.arguments) })),
  );
  expect(out.remote.streamed.map((c) => JSON.parse(c.arguments))).toEqual([{ days: 2 }]);
  const parsed = JSON.parse(out.json!);
  expect(['celsius', 'fahrenheit']).toContain(parsed.unit);
  expect(parsed.days).toBeGreaterThanOrEqual(1);
});

test("a page that asks for a server alone starts no worker and fetches none of the engine's files; info() is the server's", async ({
  harness,
}) => {
  await harness.goto('/e2e/harness.html');
  await harness.waitForFunction(() => window.hearthReady);
  const out = await harness.evaluate(async (baseURL) => {
    const engine = await window.hearth.createEngine({ backend: { remote: { baseURL, model: 'qwen2-hello' } } });
    await engine.load('qwen2-hello');
    const reply = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0 });
    const files = performance
      .getEntriesByType('resource')
      .map((e) => new URL(e.name).pathname)
      .filter((p) => /engine\.worker|hearth-(st|mt)|wllama/.test(p));
    const result = {
      files,
      info: await engine.info(),
      answer: reply.choices[0]!.message.content,
      stats: await engine.cache.stats(),
      models: await engine.models.list(),
      exported: await engine.cache.exportPrompt({ messages: [{ role: 'system', content: 'Hi' }] }).then(
        () => null,
        (e) => ({ name: e.name, code: e.code }),
      ),
    };
    engine.terminate();
    return result;
  }, chat.baseURL);
  expect(out.files).toEqual([]);
  expect(out.answer).toBe('Hello, world!');
  expect(out.info).toMatchObject({
    backend: 'remote',
    build: null,
    threads: 0,
    llamaBuild: '',
    storage: null,
    capabilities: { persistentKv: false, threads: false },
    selection: { requested: 'remote' },
  });
  expect(out.stats).toMatchObject({ persistent: false, entries: 0 });
  expect(out.models).toEqual([]);
  expect(out.exported).toEqual({ name: 'InvalidRequestError', code: 'unsupported_by_backend' });
});

test("embeddings through the server equal the wasm engine's", async ({ harness }) => {
  await openBoth(harness, embed.baseURL, 'qwen3-embed');
  const out = await harness.evaluate(async () => {
    await window.engine.load('/test-models/qwen3-embed.gguf');
    const input = ['Bread is baked.', 'The sea is deep.'];
    const remote = (globalThis as unknown as { remote: typeof window.engine }).remote;
    return {
      wasm: await window.engine.embeddings.create({ input }),
      remote: await remote.embeddings.create({ input }),
    };
  });
  out.wasm.data.forEach((d, i) => {
    const r = out.remote.data[i]!.embedding;
    expect(r).toHaveLength(d.embedding.length);
    expect(d.embedding.reduce((s, x, j) => s + x * r[j]!, 0)).toBeGreaterThan(0.999); // unit vectors: cosine
  });
});

test("errors are typed: a prompt over the server's context, an option it cannot honour, a server out of reach", async ({
  harness,
}) => {
  await openBoth(harness, chat.baseURL);
  const out = await harness.evaluate(async () => {
    const remote = (globalThis as unknown as { remote: typeof window.engine }).remote;
    const fail = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e) => ({ name: e.name, code: e.code, message: e.message }),
      );
    const full = await fail(
      remote.chat.completions.create({ messages: [{ role: 'user', content: 'word '.repeat(3000) }] }),
    );
    const shift = await fail(
      remote.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], context_overflow: 'shift' }),
    );
    const ok = (await remote.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0 }))
      .choices[0]!.message.content;
    const gone = await window.hearth.createEngine({
      backend: { remote: { baseURL: 'http://127.0.0.1:9/v1', model: 'x' } },
    });
    const unreachable = await fail(gone.load('x'));
    const badOptions = await fail(
      window.hearth.createEngine({ backend: { remote: { baseURL: 'ftp://x', model: 'x' } } }),
    );
    return { full, shift, ok, unreachable, badOptions };
  });
  expect(out.full).toMatchObject({ name: 'ContextFullError', code: 'context_full' });
  expect(out.shift).toMatchObject({ name: 'InvalidRequestError', code: 'unsupported_by_backend' });
  expect(out.ok).toBe('Hello, world!');
  expect(out.unreachable).toMatchObject({ name: 'EngineError', code: 'remote_unreachable' });
  expect(out.badOptions).toMatchObject({ name: 'InvalidRequestError', code: 'invalid_parameter' });
  expect(out.badOptions!.message).toMatch(/backend\.remote\.baseURL/);
});

test('fallback: a model this device cannot run answers from the server, and info() says why; otherwise nothing reaches the server', async ({
  harness,
}) => {
  await openEngine(harness, { backend: 'wasm' });
  const out = await harness.evaluate(async (baseURL) => {
    const fallback = { remote: { baseURL, model: 'qwen2-hello' } };
    performance.setResourceTimingBufferSize(100_000); // every request of the page counted, however many
    const toServer = () =>
      performance.getEntriesByType('resource').filter((e) => e.name.startsWith(new URL(baseURL).origin)).length;
    // A model that fits: the wasm engine answers and the server hears nothing.
    const fits = await window.hearth.createEngine({ backend: 'wasm', fallback });
    await fits.load('/test-models/qwen2-hello.gguf');
    await fits.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
    const local = { backend: (await fits.info()).backend, requests: toServer() };
    // Too large for this page's limit: the server answers.
    const small = await window.hearth.createEngine({ backend: 'wasm', maxModelBytes: 1e6, fallback });
    await small.load('/test-models/qwen2-hello.gguf');
    const r = await small.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }], temperature: 0 });
    const info = await small.info();
    // Without a fallback the same load is the typed error it always was.
    const none = await window.hearth.createEngine({ backend: 'wasm', maxModelBytes: 1e6 });
    const error = await none.load('/test-models/qwen2-hello.gguf').then(
      () => null,
      (e) => ({ name: e.name, code: e.code }),
    );
    return {
      local,
      answer: r.choices[0]!.message.content,
      backend: info.backend,
      remote: info.remote,
      reason: info.selection.reason,
      requests: toServer(),
      error,
    };
  }, chat.baseURL);
  expect(out.local).toEqual({ backend: 'wasm', requests: 0 });
  expect(out.answer).toBe('Hello, world!');
  expect(out.backend).toBe('remote');
  expect(out.remote).toEqual({ baseURL: chat.baseURL, model: 'qwen2-hello' });
  expect(out.reason).toMatch(/qwen2-hello.gguf is .* this engine holds models up to/);
  expect(out.reason).toMatch(/answers come from the server/);
  expect(out.requests).toBeGreaterThan(0);
  expect(out.error).toEqual({ name: 'ModelLoadError', code: 'too_large' });
});

test('a server that goes away mid-stream: the stream fails with EngineError remote_stream_ended, what came stays', async ({
  harness,
}) => {
  const dying = await startLlamaServer({ model: modelPath('qwen2-tiny') });
  try {
    await openBoth(harness, dying.baseURL, 'qwen2-tiny');
    const first = await harness.evaluate(async () => {
      const remote = (globalThis as unknown as { remote: typeof window.engine }).remote;
      // ignore_eos (llama-server's): the random model must not end its answer before the server is killed.
      const stream = await remote.chat.completions.create({
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
        max_tokens: 1900,
        ignore_eos: true,
      } as never);
      const it = (stream as AsyncIterable<{ choices: Array<{ delta: { content?: string } }> }>)[Symbol.asyncIterator]();
      let text = '';
      for (let i = 0; i < 3; i++) text += (await it.next()).value!.choices[0]!.delta.content ?? '';
      (globalThis as unknown as { dying: typeof it }).dying = it;
      return text;
    });
    dying.kill();
    const out = await harness.evaluate(async () => {
      const it = (globalThis as unknown as { dying: AsyncIterator<unknown> }).dying;
      let chunks = 0;
      try {
        while (!(await it.next()).done) chunks++;
        return { chunks, error: null };
      } catch (e) {
        return { chunks, error: { name: (e as Error).name, code: (e as { code?: string }).code } };
      }
    });
    expect(first.length).toBeGreaterThan(0);
    expect(out.error).toEqual({ name: 'EngineError', code: 'remote_stream_ended' });
    expect(out.chunks).toBeLessThan(1900);
  } finally {
    dying.kill();
  }
});

/** The widget's and the app's own page: a model announced at 8 GiB (vite.config.ts), which no device here can run. */
const TOO_LARGE = '/test-models/too-large.gguf';

test('the widget with fallback-url: a model the device cannot run answers from the server, and a notice says so; without it, an error', async ({
  site,
}) => {
  // The example host page without its CSP (connect-src 'self' would block the server, as docs/api.md says).
  const open = async (attrs: Record<string, string>) => {
    const tab = await site.tab('/e2e/widget-host.html?csp=none');
    await tab.evaluate((a) => {
      const el = document.querySelector('hearth-chat')!;
      el.removeAttribute('prompt-state');
      for (const [k, v] of Object.entries(a)) el.setAttribute(k, v);
    }, attrs);
    await tab.click('.launcher');
    return tab;
  };
  // Without the attribute (the default) the model is an error, and the notice never shows.
  const plain = await open({ model: TOO_LARGE });
  await expect
    .poll(() => plain.texts('.status'))
    .toEqual([expect.stringMatching(/^Could not start: .*holds models up to/)]);
  expect(await plain.visible('.remote')).toBe(false);

  const tab = await open({ model: TOO_LARGE, 'fallback-url': chat.baseURL, 'fallback-model': 'qwen2-hello' });
  const answer = await tab.evaluate(() =>
    (document.querySelector('hearth-chat') as HTMLElement & { send(t: string): Promise<string> }).send('Hi'),
  );
  expect(answer).toBe('Hello, world!');
  expect(await tab.texts('.remote')).toEqual([
    `Answers come from ${new URL(chat.baseURL).host}, not from this browser: this device cannot run the model here.`,
  ]);
  expect(await tab.visible('.remote')).toBe(true);
  // The tab without a fallback still has none: it shares no engine with this one.
  await plain.evaluate(() =>
    (document.querySelector('hearth-chat') as HTMLElement & { send(t: string): Promise<string> })
      .send('Hi')
      .catch(() => ''),
  );
  expect(await plain.visible('.remote')).toBe(false);
});

test('the app with a fallback server in its settings: off by default, then used for a model the device cannot run, and said so', async ({
  site,
}) => {
  const tab = await site.tab('/');
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  const load = async (app: Tab) => {
    await app.evaluate((url) => {
      const kind = document.getElementById('source-kind') as HTMLSelectElement;
      kind.value = 'url';
      kind.dispatchEvent(new Event('change'));
      (document.getElementById('model-url') as HTMLInputElement).value = new URL(url, location.href).href;
    }, TOO_LARGE);
    await app.click('#load');
  };
  await load(tab);
  await expect
    .poll(() => tab.texts('#load-status'))
    .toEqual([expect.stringMatching(/^Could not load the model: .*holds models up to/)]);

  await tab.fill('#fallback-url', chat.baseURL);
  await tab.fill('#fallback-model', 'qwen2-hello');
  await load(tab);
  await expect
    .poll(() => tab.texts('#load-status'))
    .toEqual([
      expect.stringMatching(
        new RegExp(`^Ready: qwen2-hello, answered by the server at ${chat.baseURL.replace(/[.]/g, '\\.')}`),
      ),
    ]);
  expect(await tab.texts('#engine-status')).toEqual([
    `Answers come from the server at ${chat.baseURL} (qwen2-hello), not from this browser`,
  ]);
  await tab.fill('#prompt', 'Hi');
  await tab.press('#prompt', 'Enter');
  await expect.poll(async () => (await tab.texts('.msg.assistant')).at(-1)).toBe('Hello, world!');
});
