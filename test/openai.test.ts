// hearth-llm/openai with the real `openai` SDK (7.x) over the real wasm engine in Node: the calls an application makes
// through the SDK, answered by openAIFetch with no network. The SDK checks status codes, decodes base64 embeddings and
// parses structured output itself, so these tests see what an application would.
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openAIFetch } from '../src/openai.ts';
import { createNodeEngine, type NodeEngine } from '../src/node.ts';
import type { Tool } from '../src/types.ts';
import { testEngine } from './helpers.ts';

let scripted: NodeEngine; // answers "Hello, world!"
let tiny: NodeEngine; // random weights, Qwen2.5 template: forced tool calls and schemas through grammars
let embedder: NodeEngine;

beforeAll(async () => {
  [scripted, tiny, embedder] = await Promise.all([
    testEngine('qwen2-hello', { nCtx: 1024, persistent: false }),
    testEngine('qwen2-tiny', { nCtx: 1024, persistent: false }),
    testEngine('qwen3-embed', { persistent: false }),
  ]);
});
afterAll(async () => {
  for (const e of [scripted, tiny, embedder]) await e?.unload();
});

/** The SDK as an application sets it up, with Hearth in place of the network. */
const sdk = (engine: NodeEngine) =>
  new OpenAI({
    fetch: openAIFetch(engine),
    baseURL: 'http://hearth.invalid/v1',
    apiKey: 'unused',
    dangerouslyAllowBrowser: true,
  });
const MODEL = 'whatever-the-app-names';
const hello = [{ role: 'user' as const, content: 'Hi' }];

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 14 } },
      required: ['city', 'days'],
      additionalProperties: false,
    },
  },
} as const satisfies Tool;

describe('chat.completions through the openai SDK', () => {
  it('create: the message (with refusal null), finish_reason and usage', async () => {
    const r = await sdk(scripted).chat.completions.create({ model: MODEL, messages: hello });
    expect(r.choices[0]!.message).toEqual({ role: 'assistant', content: 'Hello, world!', refusal: null });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage).toMatchObject({ completion_tokens: 4, total_tokens: r.usage!.prompt_tokens + 4 });
  });

  it('stream with include_usage: the text with usage: null, then the usage in a chunk with no choices; without it, no usage', async () => {
    const client = sdk(scripted);
    const chunks = [];
    for await (const c of await client.chat.completions.create({
      model: MODEL,
      messages: hello,
      stream: true,
      stream_options: { include_usage: true },
    }))
      chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello, world!');
    const [finish, usage] = chunks.slice(-2);
    expect(finish!.choices[0]!.finish_reason).toBe('stop');
    expect(usage!.choices).toEqual([]);
    expect(usage!.usage!.completion_tokens).toBe(4);
    // OpenAI's shape: with include_usage every chunk before the last says `usage: null` (not just leaves it out).
    expect(chunks.slice(0, -1).map((c) => c.usage)).toEqual(chunks.slice(0, -1).map(() => null));

    const plain = [];
    for await (const c of await client.chat.completions.create({ model: MODEL, messages: hello, stream: true }))
      plain.push(c);
    expect(plain.every((c) => !('usage' in c))).toBe(true);
    expect(plain.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  });

  it("the SDK's stream helper assembles the same completion as a plain call", async () => {
    const client = sdk(scripted);
    const final = await client.chat.completions.stream({ model: MODEL, messages: hello }).finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe('Hello, world!');
    expect(final.choices[0]!.finish_reason).toBe('stop');
  });

  it('tools: a forced call parses, and streamed tool-call deltas assemble to the same call', async () => {
    const client = sdk(tiny);
    const params = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
      tools: [WEATHER],
      tool_choice: 'required' as const,
      seed: 3,
      temperature: 1,
    };
    const r = await client.chat.completions.create(params);
    const calls = r.choices[0]!.message.tool_calls!;
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    expect(calls.length).toBeGreaterThan(0);
    const call = calls[0]!;
    expect(call.type === 'function' && call.function.name).toBe('get_weather');
    if (call.type !== 'function') throw new Error('not a function call');
    expect(Object.keys(JSON.parse(call.function.arguments)).sort()).toEqual(['city', 'days']);

    const streamed = await client.chat.completions.stream(params).finalChatCompletion();
    expect(streamed.choices[0]!.message.tool_calls!.map((c) => c.type === 'function' && c.function)).toEqual(
      calls.map((c) => c.type === 'function' && c.function),
    );
  });

  it("parse with zodResponseFormat: message.parsed is the schema's object", async () => {
    const Trip = z.object({
      city: z.string().max(10),
      days: z.number().int().min(1).max(9),
      unit: z.enum(['celsius', 'fahrenheit']),
    });
    const client = sdk(tiny);
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.parse({
        model: MODEL,
        messages: [{ role: 'user', content: 'Plan a trip' }],
        response_format: zodResponseFormat(Trip, 'trip'),
        seed,
        temperature: 1,
      });
      const parsed = r.choices[0]!.message.parsed;
      expect(Trip.safeParse(parsed).success, JSON.stringify(parsed)).toBe(true);
    }
  });

  it('logprobs: one entry per generated token, each with top_logprobs alternatives', async () => {
    const r = await sdk(scripted).chat.completions.create({
      model: MODEL,
      messages: hello,
      logprobs: true,
      top_logprobs: 3,
      temperature: 0,
    });
    const content = r.choices[0]!.logprobs!.content!;
    expect(content.map((t) => t.token).join('')).toBe('Hello, world!');
    for (const t of content) {
      expect(t.top_logprobs).toHaveLength(3);
      expect(t.top_logprobs[0]!.logprob).toBeGreaterThanOrEqual(t.logprob - 1e-6);
    }
  });
});

describe('embeddings and models through the openai SDK', () => {
  it("embeddings.create with the SDK's default (base64) and with float give the engine's vectors", async () => {
    const input = ['Bread is baked.', 'The sea is deep.'];
    const direct = await embedder.embeddings.create({ input });
    const client = sdk(embedder);
    const byDefault = await client.embeddings.create({ model: MODEL, input });
    const asFloat = await client.embeddings.create({ model: MODEL, input, encoding_format: 'float' });
    for (const r of [byDefault, asFloat]) {
      expect(r.data.map((d) => d.index)).toEqual([0, 1]);
      r.data.forEach((d, i) => {
        expect(d.embedding).toHaveLength(direct.data[i]!.embedding.length);
        d.embedding.forEach((x, j) => expect(Math.abs(x - direct.data[i]!.embedding[j]!)).toBeLessThan(1e-6));
      });
    }
    expect(byDefault.usage.prompt_tokens).toBe(direct.usage.prompt_tokens);
  });

  it('models.list and models.retrieve name the loaded model; another name is a 404', async () => {
    const client = sdk(scripted);
    const name = (await scripted.info()).model!.name;
    const list = [];
    for await (const m of client.models.list()) list.push(m.id);
    expect(list).toEqual([name]);
    expect((await client.models.retrieve(name)).id).toBe(name);
    await expect(client.models.retrieve('gpt-4o')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('errors and abort through the openai SDK', () => {
  it('a bad parameter and a full context are 400s naming what to change; no model is a 404; the engine goes on', async () => {
    const client = sdk(scripted);
    const bad = await client.chat.completions
      .create({ model: MODEL, messages: hello, temperature: -1 })
      .catch((e) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad).toMatchObject({ status: 400, param: 'temperature', type: 'invalid_request_error' });
    expect(bad.message).toMatch(/temperature/);

    const long = [{ role: 'user' as const, content: 'word '.repeat(3000) }];
    const full = await client.chat.completions.create({ model: MODEL, messages: long }).catch((e) => e);
    expect(full).toBeInstanceOf(OpenAI.BadRequestError);
    expect(full.code).toBe('context_length_exceeded');

    const stream = await client.chat.completions
      .create({ model: MODEL, messages: hello, max_tokens: -3, stream: true })
      .catch((e) => e);
    expect(stream).toBeInstanceOf(OpenAI.BadRequestError);

    const empty = await createNodeEngine({ cache: { persistent: false } });
    const none = await sdk(empty)
      .chat.completions.create({ model: MODEL, messages: hello })
      .catch((e) => e);
    expect(none).toBeInstanceOf(OpenAI.NotFoundError);
    expect(none.code).toBe('model_not_found');
    await expect(client.embeddings.create({ model: MODEL, input: 'x' })).rejects.toMatchObject({
      status: 400,
      code: 'not_an_embedding_model',
    });
    const unknown = await client.post('/audio/speech', { body: {} }).catch((e) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);

    expect((await client.chat.completions.create({ model: MODEL, messages: hello })).choices[0]!.message.content).toBe(
      'Hello, world!',
    );
  });

  it("abort: a stream ends where it was aborted (the SDK ends its iteration quietly), a call in flight throws the SDK's abort error, and the engine answers the next request", async () => {
    const client = sdk(tiny);
    const long = { model: MODEL, messages: hello, max_tokens: 400, temperature: 1, seed: 5 } as const;
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ ...long, stream: true }, { signal: controller.signal });
    let chunks = 0;
    for await (const _ of stream) if (++chunks === 3) controller.abort();
    expect(chunks).toBe(3);

    const inFlight = new AbortController();
    setTimeout(() => inFlight.abort(), 50);
    await expect(client.chat.completions.create(long, { signal: inFlight.signal })).rejects.toBeInstanceOf(
      OpenAI.APIUserAbortError,
    );

    const r = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 3 });
    expect(r.usage!.completion_tokens).toBe(3);
  });
});
