// Several requests at once: continuous batching, the FIFO queue, a context that grows with demand, and what
// happens when a reply fills the context. Real wasm, real llama.cpp; greedy decoding compared with the same
// requests run one at a time.
import { describe, expect, it } from 'vitest';
import { resolveRequest } from '../src/core/chat/request.ts';
import { ContextFullError } from '../src/errors.ts';
import type { NodeEngine } from '../src/node.ts';
import type { ChatCompletionChunk, ChatCompletionCreateParams, ChatMessage } from '../src/types.ts';
import type { ModelName } from './fixtures/models.ts';
import {
  inspect,
  collect,
  maxDiff,
  modelPath,
  promptTokens,
  scale,
  SYSTEM,
  systemPrefixLength,
  testEngine,
  type TestEngineOptions,
  top2,
  trackEngines,
} from './helpers.ts';

const track = trackEngines();

/** An engine that keeps no cache (unless asked): every request decodes its prompt from scratch. */
const plainEngine = (model: ModelName, opts: TestEngineOptions) =>
  track(testEngine(model, { persistent: false, conversations: false, systemPrompt: false, minTokens: 32, ...opts }));

interface Run {
  tokens: number[];
  logits: Float32Array[];
  text: string;
  chunks: ChatCompletionChunk[];
}

/** A greedy completion with the logits every token was sampled from. */
async function traced(
  engine: NodeEngine,
  messages: ChatMessage[],
  maxTokens: number,
  opts: {
    signal?: AbortSignal;
    onChunk?: (n: number) => unknown;
    onToken?: () => void;
    extra?: Partial<ChatCompletionCreateParams>;
  } = {},
): Promise<Run> {
  const run: Run = { tokens: [], logits: [], text: '', chunks: [] };
  const { onProgress, ...request } = resolveRequest({ messages, temperature: 0, max_tokens: maxTokens, ...opts.extra });
  await inspect(engine).complete(
    request,
    {
      signal: opts.signal,
      onProgress,
      onChunk: async (c) => {
        run.chunks.push(c);
        run.text += c.choices[0]?.delta.content ?? '';
        await opts.onChunk?.(run.chunks.length);
      },
    },
    ({ token, logits }) => {
      run.tokens.push(token);
      run.logits.push(logits);
      opts.onToken?.();
    },
  );
  return run;
}

/**
 * Batching moves logits by float noise only (up to ~2% of their scale, measured on Q8_0: llama.cpp's results depend
 * a little on which tokens share a batch). Compares a batched run with the same request run alone: logits within
 * that bound at every step, and the same token wherever the alone-run's top-1 margin is above it (below it the runs
 * may part, and the comparison stops there).
 */
function expectSameRun(alone: Run, batched: Run): { steps: number; worst: number } {
  let worst = 0;
  let steps = 0;
  for (let k = 0; k < alone.tokens.length; k++) {
    expect(batched.tokens.length).toBeGreaterThan(k);
    const bound = 0.02 * scale(alone.logits[k]!);
    const d = maxDiff(alone.logits[k]!, batched.logits[k]!);
    worst = Math.max(worst, d / scale(alone.logits[k]!));
    expect(d).toBeLessThanOrEqual(bound);
    steps++;
    if (top2(alone.logits[k]!) <= bound) return { steps, worst };
    expect(batched.tokens[k]).toBe(alone.tokens[k]);
  }
  expect(batched.tokens).toEqual(alone.tokens);
  expect(batched.text).toBe(alone.text);
  return { steps, worst };
}

const question = (i: number, words: number): ChatMessage[] => [
  { role: 'system', content: 'You are a helpful assistant.' },
  {
    role: 'user',
    content: `Question ${i}: ${Array.from({ length: words }, (_, k) => `word${(k * 7 + i) % 50}`).join(' ')}`,
  },
];
const QUESTIONS = [question(1, 5), question(2, 60), question(3, 20), question(4, 140)];

describe('continuous batching', () => {
  // Fixtures with decisive logits (every step's top-1 margin far above the noise), f32 and Q8_0 weights, and the
  // Llama 3 template.
  for (const model of ['qwen2-hello', 'qwen2-hello-q8', 'llama3-hello'] as const) {
    it(`decodes 4 concurrent greedy requests together and gives each the logits and tokens it gets alone (${model})`, async () => {
      const alone = await plainEngine(model, { nParallel: 1, nCtx: 2048 });
      const together = await plainEngine(model, { nParallel: 4, nCtx: 2048 });
      const expected: Run[] = [];
      for (const q of QUESTIONS) expected.push(await traced(alone, q, 12));
      const runs = await Promise.all(QUESTIONS.map((q) => traced(together, q, 12)));
      let compared = 0;
      let worst = 0;
      runs.forEach((r, i) => {
        const c = expectSameRun(expected[i]!, r);
        compared += c.steps;
        worst = Math.max(worst, c.worst);
        expect(r.text).toBe('Hello, world!');
      });
      expect(compared).toBe(QUESTIONS.length * 5); // every step of every answer compared (the bound never cut it short)
      console.log(
        `[batch] ${model}: 4 concurrent vs alone, largest logit difference ${(worst * 100).toFixed(4)}% of scale`,
      );
    });
  }

  it('shares decode steps between concurrent requests', async () => {
    const engine = await plainEngine('qwen2-tiny', { nParallel: 4, nCtx: 2048 });
    const { profile } = inspect(engine);
    const before = { ...profile };
    const runs = await Promise.all(QUESTIONS.map((q) => traced(engine, q, 16)));
    const generated = runs.reduce((n, r) => n + r.tokens.length, 0);
    expect(generated).toBe(64);
    // One at a time this takes 64 generation steps plus the prompts; together, about 16 plus the prompts.
    expect(profile.steps - before.steps).toBeLessThan(32);
    // Without a conversation cache, finished requests free their sequences.
    expect((await engine.cache.stats()).memory.tokens).toBe(0);
  });

  it("aborting one request leaves the others' output unchanged", async () => {
    const alone = await plainEngine('qwen2-hello-q8', { nParallel: 1, nCtx: 2048 });
    const together = await plainEngine('qwen2-hello-q8', { nParallel: 4, nCtx: 2048 });
    const qs = QUESTIONS.slice(0, 3);
    const expected: Run[] = [];
    for (const q of qs) expected.push(await traced(alone, q, 12));
    const stop = new AbortController();
    const runs = await Promise.allSettled(
      qs.map((q, i) =>
        traced(together, q, 12, i === 1 ? { signal: stop.signal, onChunk: (n) => n === 3 && stop.abort() } : {}),
      ),
    );
    expect(runs[1]).toMatchObject({ status: 'rejected', reason: { name: 'AbortError' } });
    for (const i of [0, 2]) {
      expect(runs[i]!.status).toBe('fulfilled');
      expectSameRun(expected[i]!, (runs[i] as PromiseFulfilledResult<Run>).value);
    }
  });

  it('runs requests beyond nParallel in FIFO order, and one aborted while queued never starts', async () => {
    const engine = await plainEngine('qwen2-tiny', { nParallel: 2, nCtx: 2048 });
    const events: string[] = [];
    const ask = (name: string, signal?: AbortSignal) =>
      engine.chat.completions
        .create({ messages: question(name.length, 10), temperature: 0, max_tokens: 6, stream: true, signal })
        .then(async (stream) => {
          for await (const c of stream) {
            if (c.choices[0]!.delta.role) events.push(`start ${name}`);
            if (c.choices[0]!.finish_reason) events.push(`end ${name}`);
          }
        });
    const gone = new AbortController();
    const all = [ask('a'), ask('b'), ask('c'), ask('d', gone.signal), ask('e')];
    gone.abort();
    const settled = await Promise.allSettled(all);
    expect(settled[3]).toMatchObject({ status: 'rejected', reason: { name: 'AbortError' } });
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(4);
    const at = (e: string) => events.indexOf(e);
    expect(events).not.toContain('start d');
    expect(at('start a')).toBeLessThan(at('start b'));
    expect(at('start b')).toBeLessThan(at('start c'));
    expect(at('start c')).toBeLessThan(at('start e'));
    // Two at a time: c starts only once a or b has ended, e once two others have.
    expect(at('start c')).toBeGreaterThan(Math.min(at('end a'), at('end b')));
    expect(events.filter((e, i) => e.startsWith('end') && i < at('start e'))).toHaveLength(2);
  });
});

describe('loads between requests', () => {
  it('a load waits for the requests before it; requests after it run on the new model; none waits forever', async () => {
    const engine = await plainEngine('qwen2-hello', { nCtx: 1024 });
    const ask = () =>
      engine.chat.completions.create({ messages: QUESTIONS[0]!, temperature: 0, max_tokens: 12, stream: false });
    const first = ask();
    const toLlama = engine.load({ path: modelPath('llama3-hello') }, { nCtx: 1024 });
    const between = ask();
    const back = engine.load({ path: modelPath('qwen2-hello') }, { nCtx: 1024 });
    const last = ask();
    const [r1, , r2, , r3] = await Promise.all([first, toLlama, between, back, last]);
    expect(r1.model).toContain('qwen2');
    expect(r3.model).toContain('qwen2');
    for (const r of [r1, r2, r3]) expect(r.choices[0]!.message.content).toBe('Hello, world!');
  });
});

describe('dynamic context size', () => {
  it('grows the context while a reply is being generated, and the reply is what a large fixed context gives', async () => {
    const turn1: ChatMessage[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Tell me about bread.' },
    ];
    const long = question(9, 700); // ~2,000 tokens: next to the reply it needs a larger context, within 4096
    const fixed = await plainEngine('qwen2-tiny', { nCtx: 4096, conversations: true });
    const dynamic = await plainEngine('qwen2-tiny', { conversations: true });
    expect((await dynamic.info()).context).toMatchObject({ dynamic: true, nCtx: 1024, maxCtx: 4096 });

    const first = await traced(fixed, turn1, 8);
    expect((await traced(dynamic, turn1, 8)).tokens).toEqual(first.tokens);
    const turn2: ChatMessage[] = [
      ...turn1,
      { role: 'assistant', content: first.text },
      { role: 'user', content: 'And rivers?' },
    ];
    const expected = await traced(fixed, turn2, 24);

    // The long request arrives after the third chunk of the reply: the context grows under the running reply.
    let grown!: Promise<Run>;
    let nCtxAtEnd = 0;
    const reply = await traced(dynamic, turn2, 24, {
      onChunk: async (n) => {
        if (n === 3) grown = traced(dynamic, long, 4);
        nCtxAtEnd = (await dynamic.info()).nCtx;
      },
    });
    await grown;
    expect(nCtxAtEnd).toBeGreaterThan(1024); // it grew before the reply ended
    expect((await dynamic.info()).nCtx).toBeGreaterThanOrEqual(promptTokens(dynamic, long).length);
    expect(reply.chunks.at(-1)!.timings!.cache_source).toBe('memory');
    const c = expectSameRun(expected, reply);
    expect(c.steps).toBeGreaterThan(3);

    // The conversation's cells moved into the new context: the next turn still starts from memory.
    const turn3: ChatMessage[] = [
      ...turn2,
      { role: 'assistant', content: reply.text },
      { role: 'user', content: 'Thanks.' },
    ];
    const next = await dynamic.chat.completions.create({
      messages: turn3,
      temperature: 0,
      max_tokens: 4,
      stream: false,
    });
    expect(next.timings.cache_source).toBe('memory');
    expect(next.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(promptTokens(dynamic, turn2).length);
  });

  it('keeps the KV cache within its memory budget and refuses a prompt beyond it before any chunk', async () => {
    const probe = await plainEngine('qwen2-tiny', {});
    const perToken = (await probe.info()).context!.kvBytesPerToken;
    const engine = await plainEngine('qwen2-tiny', { kvBudgetBytes: perToken * 2048 + 100, cacheTypeK: 'f32' });
    const info = (await engine.info()).context!;
    expect(info).toMatchObject({ maxCtx: 2048, budgetBytes: perToken * 2048 + 100 });

    const big = question(5, 600); // ~1,700 tokens: fits, the context grows to its limit
    expect(promptTokens(engine, big).length).toBeGreaterThan(1024);
    const ok = await engine.chat.completions.create({ messages: big, temperature: 0, max_tokens: 4, stream: false });
    expect(ok.usage.completion_tokens).toBeGreaterThan(0);
    const grown = (await engine.info()).context!;
    expect(grown.nCtx).toBe(2048);
    expect(grown.nCtx * perToken).toBeLessThanOrEqual(grown.budgetBytes);

    const tooBig = question(6, 800); // ~2,300 tokens
    const chunks: ChatCompletionChunk[] = [];
    const err = await engine.chat.completions.create({ messages: tooBig, stream: true }).then(
      async (s) => chunks.push(...(await collect(s)).chunks),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ContextFullError);
    expect((err as ContextFullError).details).toEqual({
      promptTokens: promptTokens(engine, tooBig).length,
      nCtx: 2048,
    });
    expect(chunks).toHaveLength(0);
    expect((await engine.info()).context!.nCtx).toBe(2048);
  });
});

describe('context overflow', () => {
  const messages: ChatMessage[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'Write a long story.' },
  ];

  it('"stop" (default) ends the reply with finish_reason "length" when the context is full', async () => {
    const engine = await plainEngine('qwen2-tiny', { nCtx: 512 });
    const prompt = promptTokens(engine, messages).length;
    const r = await engine.chat.completions.create({ messages, temperature: 0, max_tokens: 1000, stream: false });
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage.completion_tokens).toBe(512 - prompt + 1); // the last sampled token needs no cell
  });

  it('"error" fails the stream with ContextFullError after what it streamed', async () => {
    const engine = await plainEngine('qwen2-tiny', { nCtx: 512 });
    const chunks: ChatCompletionChunk[] = [];
    const stream = await engine.chat.completions.create({
      messages,
      temperature: 0,
      max_tokens: 1000,
      stream: true,
      context_overflow: 'error',
    });
    const err = await (async () => {
      for await (const c of stream) chunks.push(c);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContextFullError);
    expect(chunks.length).toBeGreaterThan(100);
  });

  it('"shift" keeps the system prompt, drops the oldest tokens, and keeps the bookkeeping exact', async () => {
    const engine = await plainEngine('qwen2-tiny', { nCtx: 512, conversations: true });
    const cold = await plainEngine('qwen2-tiny', { nCtx: 512, systemPrompt: true });
    const system = promptTokens(engine, messages).subarray(0, systemPrefixLength(cold, messages));
    expect(system.length).toBeGreaterThan(200);
    let checked = 0;
    let longest = 0;
    const run = await traced(engine, messages, 700, {
      extra: { context_overflow: 'shift' },
      onToken: () => {
        const slot = inspect(engine)
          .slots()
          .find((s) => s.pending)!;
        // The cells hold exactly slot.tokens: positions 0..n-1, the system prompt first.
        expect(slot.cells).toBe(slot.tokens.length);
        expect(slot.tokens.slice(0, system.length)).toEqual(Array.from(system));
        longest = Math.max(longest, slot.tokens.length);
        checked++;
      },
    });
    expect(run.tokens).toHaveLength(700); // far more than the 512-token context holds
    expect(run.chunks.at(-1)!.choices[0]!.finish_reason).toBe('length');
    expect(run.logits.every((l) => l.every(Number.isFinite))).toBe(true);
    expect(longest).toBeLessThanOrEqual(512);
    expect(checked).toBeGreaterThan(600);

    // The system prompt's cells were never moved: the next request reuses them and gets a cold engine's logits.
    const other: ChatMessage[] = [messages[0]!, { role: 'user', content: 'Something else.' }];
    const warm = await inspect(engine).promptLogits({ messages: other });
    expect(warm.cached).toBe(system.length);
    const coldLogits = await inspect(cold).promptLogits({ messages: other });
    expect(maxDiff(warm.logits, coldLogits.logits)).toBeLessThanOrEqual(0.02 * scale(coldLogits.logits));
  });
});
