// The engine in Node over the real wasm: metadata, chat completions (greedy, seeded sampling, parameters), stop
// conditions, streaming, and abort.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortError, InvalidRequestError } from '../src/errors.ts';
import { defaultWasmDir, type NodeEngine } from '../src/node.ts';
import type { ChatCompletionCreateParams } from '../src/types.ts';
import { inspect, collect, hello, testEngine } from './helpers.ts';

let tiny: NodeEngine; // random weights: varied gibberish
let scripted: NodeEngine; // answers "Hello, world!" then <|im_end|>

beforeAll(async () => {
  [tiny, scripted] = await Promise.all([
    testEngine('qwen2-tiny', { nCtx: 1024 }),
    testEngine('qwen2-hello', { nCtx: 1024 }),
  ]);
});
afterAll(async () => {
  await tiny.unload();
  await scripted.unload();
});

const text = async (
  engine: NodeEngine,
  params: Omit<ChatCompletionCreateParams, 'messages'> & { messages?: ChatCompletionCreateParams['messages'] },
) => {
  const res = await engine.chat.completions.create({ messages: hello, ...params, stream: false });
  return res.choices[0]!.message.content!;
};

describe('metadata', () => {
  it('reports the model, the build and the context', async () => {
    const info = await tiny.info();
    const buildInfo = JSON.parse(readFileSync(join(defaultWasmDir, 'build-info.json'), 'utf8'));
    expect(info.llamaBuild).toBe(buildInfo.llama);
    expect(info.version).toBe(
      JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')).version,
    );
    expect(info.wasmSimd).toBe(true);
    expect(info.build).toBe('st');
    expect(info.buildReason).toBe('the plain single-thread build, the default in Node');
    expect(info.nCtx).toBe(1024);
    const m = info.model!;
    expect(m).toMatchObject({
      architecture: 'qwen2',
      nEmbd: 64,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nCtxTrain: 4096,
      nVocab: 151936,
      eosToken: 151643,
    });
    expect(m.eogTokens).toEqual(expect.arrayContaining([151643, 151645])); // <|endoftext|>, <|im_end|>
    expect(m.chatTemplate).toContain('<|im_start|>');
    expect(m.metadata['qwen2.context_length']).toBe('4096');
    expect(m.nParams).toBeGreaterThan(9e6);
  });
});

describe('chat completions', () => {
  it('returns an OpenAI ChatCompletion with usage and timings', async () => {
    const res = await scripted.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] });
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0]!.message).toEqual({ role: 'assistant', content: 'Hello, world!', refusal: null });
    expect(res.choices[0]!.finish_reason).toBe('stop'); // stopped at <|im_end|>, which is not emitted
    expect(res.usage.completion_tokens).toBe(4);
    expect(res.usage.total_tokens).toBe(res.usage.prompt_tokens + 4);
    expect(res.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(res.timings).toMatchObject({
      prompt_n: res.usage.prompt_tokens,
      predicted_n: 4,
      cache_n: 0,
      cache_source: 'none',
    });
    expect(res.timings.prompt_ms).toBeGreaterThan(0);
  });

  it('is deterministic at temperature 0, streamed or not', async () => {
    const a = await text(tiny, { temperature: 0, max_tokens: 24 });
    const b = await text(tiny, { temperature: 0, max_tokens: 24 });
    const s = await collect(
      await tiny.chat.completions.create({ messages: hello, temperature: 0, max_tokens: 24, stream: true }),
    );
    expect(a.length).toBeGreaterThan(0);
    expect(b).toBe(a);
    expect(s.text).toBe(a);
  });

  it('reproduces a sampled answer from its seed, and another seed gives another answer', async () => {
    const p = { temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, max_tokens: 24 };
    const a = await text(tiny, { ...p, seed: 42 });
    expect(await text(tiny, { ...p, seed: 42 })).toBe(a);
    expect(await text(tiny, { ...p, seed: 43 })).not.toBe(a);
  });

  it('top_k=1, a tiny top_p and min_p=1 all reduce sampling to the most likely token', async () => {
    const greedy = await text(tiny, { temperature: 0, max_tokens: 24 });
    const hot = { temperature: 3, seed: 7, max_tokens: 24 };
    expect(await text(tiny, { ...hot, top_k: 0, top_p: 1, min_p: 0 })).not.toBe(greedy);
    expect(await text(tiny, { ...hot, top_k: 1 })).toBe(greedy);
    expect(await text(tiny, { ...hot, top_k: 0, min_p: 0, top_p: 1e-9 })).toBe(greedy);
    expect(await text(tiny, { ...hot, top_k: 0, top_p: 1, min_p: 1 })).toBe(greedy);
  });

  it('repeat_penalty pushes down tokens already in the prompt, within repeat_last_n', async () => {
    const messages = [{ role: 'user' as const, content: 'Hello' }]; // the answer's first token is in the prompt
    expect(await text(scripted, { messages, temperature: 0 })).toBe('Hello, world!');
    const penalised = await text(scripted, { messages, temperature: 0, repeat_penalty: 10, max_tokens: 4 });
    expect(penalised.startsWith('Hello')).toBe(false);
    expect(await text(scripted, { messages, temperature: 0, repeat_penalty: 10, repeat_last_n: 0 })).toBe(
      'Hello, world!',
    );
  });

  it('stops at max_tokens with finish_reason "length"', async () => {
    const res = await tiny.chat.completions.create({ messages: hello, temperature: 0, max_tokens: 5 });
    expect(res.usage.completion_tokens).toBe(5);
    expect(res.choices[0]!.finish_reason).toBe('length');
  });

  it('stops at a stop string that spans two tokens, and never emits it', async () => {
    const { chunks } = await collect(await scripted.chat.completions.create({ messages: hello, stream: true }));
    const pieces = chunks.map((c) => c.choices[0]?.delta.content).filter((t): t is string => !!t);
    expect(pieces).toEqual(['Hello', ',', ' world', '!']); // one chunk per token
    const res = await scripted.chat.completions.create({ messages: hello, stop: ['lo, w'] }); // "Hel|lo" + "," + " w|orld"
    expect(res.choices[0]!.message.content).toBe('Hel');
    expect(res.choices[0]!.finish_reason).toBe('stop');
    const streamed = await collect(
      await scripted.chat.completions.create({ messages: hello, stop: ['o, wo', 'zzz'], stream: true }),
    );
    expect(streamed.text).toBe('Hell');
  });

  it('streams OpenAI chunks: role first, then content, then finish_reason with timings; usage only when asked, in a chunk of its own', async () => {
    const { chunks, text: all } = await collect(
      await scripted.chat.completions.create({ messages: hello, stream: true }),
    );
    expect(all).toBe('Hello, world!');
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]!.id)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.choices[0]!.finish_reason).toBe('stop');
    expect(last.timings?.predicted_n).toBe(4);
    expect(chunks.some((c) => 'usage' in c)).toBe(false);

    const asked = await collect(
      await scripted.chat.completions.create({
        messages: hello,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const [finish, usage] = asked.chunks.slice(-2);
    expect(finish!.choices[0]!.finish_reason).toBe('stop');
    // OpenAI's shape: every chunk before the usage chunk says usage: null.
    expect(asked.chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(usage).toMatchObject({ id: finish!.id, object: 'chat.completion.chunk', choices: [] });
    expect(usage!.usage).toMatchObject({ completion_tokens: 4, total_tokens: usage!.usage!.prompt_tokens + 4 });
  });

  it('rejects bad parameters with a typed error that names the parameter', async () => {
    await expect(tiny.chat.completions.create({ messages: [] })).rejects.toThrow(InvalidRequestError);
    await expect(tiny.chat.completions.create({ messages: hello, temperature: -1 })).rejects.toThrow(/temperature/);
    await expect(tiny.chat.completions.create({ messages: hello, max_tokens: 0 })).rejects.toThrow(/max_tokens/);
    await expect(
      tiny.chat.completions.create({ messages: [{ role: 'wizard' as 'user', content: 'x' }] }),
    ).rejects.toThrow(/role/);
    // …and keeps working.
    expect(await text(scripted, {})).toBe('Hello, world!');
  });
});

describe('abort', () => {
  it('ends a stream with AbortError within a decode step, and the next request is correct', async () => {
    const reference = await text(tiny, { temperature: 0, max_tokens: 40 });
    const controller = new AbortController();
    const stream = await tiny.chat.completions.create({
      messages: hello,
      temperature: 0,
      max_tokens: 400,
      stream: true,
      signal: controller.signal,
    });
    let received = 0;
    let tokensAfterAbort = 0;
    const run = (async () => {
      for await (const c of stream) {
        if (c.choices[0]?.delta.content) received++;
        if (controller.signal.aborted) tokensAfterAbort++;
        if (received === 5) controller.abort();
      }
    })();
    await expect(run).rejects.toThrow(AbortError);
    expect(tokensAfterAbort).toBeLessThanOrEqual(1);
    expect(await text(tiny, { temperature: 0, max_tokens: 40 })).toBe(reference);
  });

  it('aborts a non-streaming request, and one that is still queued', async () => {
    const c1 = new AbortController();
    const c2 = new AbortController();
    const first = tiny.chat.completions.create({ messages: hello, max_tokens: 300, signal: c1.signal });
    const queued = tiny.chat.completions.create({ messages: hello, max_tokens: 300, signal: c2.signal });
    c2.abort();
    await expect(queued).rejects.toThrow(AbortError);
    setTimeout(() => c1.abort(), 30);
    await expect(first).rejects.toThrow(AbortError);
    await expect(tiny.chat.completions.create({ messages: hello, signal: AbortSignal.abort() })).rejects.toThrow(
      AbortError,
    );
  });

  it('stops generating when the consumer leaves the stream early', async () => {
    // One request at a time: a reply that went on generating would hold the engine for its 400 tokens.
    const engine = await testEngine('qwen2-tiny', { nCtx: 1024, nParallel: 1 });
    const reference = await text(engine, { temperature: 0, max_tokens: 3 });
    const stream = await engine.chat.completions.create({
      messages: hello,
      temperature: 0,
      stream: true,
      max_tokens: 400,
    });
    const before = inspect(engine).profile.steps;
    for await (const c of stream) if (c.choices[0]?.delta.content) break;
    const res = await engine.chat.completions.create({ messages: hello, temperature: 0, max_tokens: 3 });
    expect(res.usage.completion_tokens).toBe(3);
    expect(res.choices[0]!.message.content).toBe(reference);
    // The abandoned reply stopped within a few steps; the next request then took one step for its prompt and
    // two for its tokens.
    expect(inspect(engine).profile.steps - before).toBeLessThan(20);
    await engine.unload();
  });
});
