// hearth-llm/ai-sdk through the real AI SDK (`ai`) over the real wasm engine: text, streams and their usage, structured
// output and forced tool calls from random models (a grammar holds them to the schema), a tool loop, reasoning,
// embeddings, reranking, abort, and the errors and warnings a caller sees.
import { embed, embedMany, generateText, Output, rerank, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHearth } from '../src/ai-sdk.ts';
import { InvalidRequestError } from '../src/errors.ts';
import type { NodeEngine } from '../src/node.ts';
import type { ChatCompletionChunk } from '../src/types.ts';
import { inspect, SYSTEM, testEngine } from './helpers.ts';

// The SDK logs warnings to the console; the tests read them from the results instead.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

let hello: NodeEngine; // answers "Hello, world!"; caches prompts from 32 tokens
let tiny: NodeEngine; // random weights: gibberish, unless a grammar holds it; one request at a time
let qwen3: NodeEngine; // Qwen3's template: <think> reasoning
let embedder: NodeEngine;
let reranker: NodeEngine;

beforeAll(async () => {
  [hello, tiny, qwen3, embedder, reranker] = await Promise.all([
    testEngine('qwen2-hello', { nCtx: 2048, minTokens: 32 }),
    testEngine('qwen2-tiny', { nCtx: 2048, nParallel: 1 }),
    testEngine('qwen3-tiny', { nCtx: 2048 }),
    testEngine('qwen3-embed', {}),
    testEngine('qwen3-rerank', {}),
  ]);
});
afterAll(async () => {
  for (const e of [hello, tiny, qwen3, embedder, reranker]) await e?.unload();
});

const types = (parts: Array<{ type: string }>) => parts.map((p) => p.type).filter((t, i, all) => t !== all[i - 1]);

describe('generateText and streamText', () => {
  it('generateText answers, with usage, finish reason, timings and the model name', async () => {
    const hearth = createHearth(hello);
    const r = await generateText({ model: hearth(), prompt: 'Hi' });
    const direct = await hello.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] });
    expect(r.text).toBe('Hello, world!');
    expect(r.finishReason).toBe('stop');
    expect(r.usage.inputTokens).toBe(direct.usage.prompt_tokens);
    expect(r.usage.outputTokens).toBe(4);
    expect(r.providerMetadata?.hearth?.timings).toMatchObject({ predicted_n: 4 });
    const name = (await hello.info()).model!.name;
    expect(r.response.modelId).toBe(name);
    expect(hearth().modelId).toBe(name || 'hearth');
    expect(hearth('my-model').modelId).toBe('my-model');
  });

  it('the second turn of a conversation reports its cached prompt tokens', async () => {
    const hearth = createHearth(hello);
    const messages = [{ role: 'user' as const, content: 'Hi' }];
    const first = await generateText({ model: hearth(), system: SYSTEM, messages });
    const second = await generateText({
      model: hearth(),
      system: SYSTEM,
      messages: [...messages, { role: 'assistant', content: first.text }, { role: 'user', content: 'And again?' }],
    });
    expect(first.usage.inputTokenDetails.cacheReadTokens).toBe(0);
    expect(second.text).toBe('Hello, world!');
    expect(second.usage.inputTokenDetails.cacheReadTokens).toBeGreaterThan(first.usage.inputTokens! - 8);
    expect(second.usage.inputTokenDetails.noCacheTokens).toBe(
      second.usage.inputTokens! - second.usage.inputTokenDetails.cacheReadTokens!,
    );
    expect(second.providerMetadata?.hearth).toMatchObject({
      cachedTokens: second.usage.inputTokenDetails.cacheReadTokens,
      timings: { cache_source: 'memory' },
    });
  });

  it('streamText streams the text, then the usage and finish reason', async () => {
    const r = streamText({ model: createHearth(hello)(), prompt: 'Hi' });
    const parts = [];
    for await (const p of r.fullStream) parts.push(p);
    expect(types(parts)).toEqual([
      'start',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    expect(parts.filter((p) => p.type === 'text-delta').length).toBeGreaterThan(1); // streamed, not one piece
    expect(await r.text).toBe('Hello, world!');
    const direct = await hello.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] });
    const usage = await r.usage;
    expect(usage.inputTokens).toBe(direct.usage.prompt_tokens);
    expect(usage.outputTokens).toBe(4);
    expect(usage.totalTokens).toBe(direct.usage.prompt_tokens + 4);
    expect(await r.finishReason).toBe('stop');
    expect((await r.providerMetadata)?.hearth?.timings).toMatchObject({ predicted_n: 4 });
  });

  it("include.rawChunks hands out Hearth's own chunks, the last one with the usage", async () => {
    const r = streamText({ model: createHearth(hello)(), prompt: 'Hi', include: { rawChunks: true } });
    const raw: ChatCompletionChunk[] = [];
    for await (const p of r.fullStream) if (p.type === 'raw') raw.push(p.rawValue as ChatCompletionChunk);
    expect(raw.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello, world!');
    expect(raw.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(raw.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 4 } });
  });

  it('reasoning: "none" turns thinking off in templates that have the switch', async () => {
    const model = createHearth(qwen3)();
    const on = await generateText({ model, prompt: 'Hi', maxOutputTokens: 1 });
    const off = await generateText({ model, prompt: 'Hi', maxOutputTokens: 1, reasoning: 'none' });
    // Qwen3's template then writes an empty <think></think> block into the prompt itself.
    expect(off.usage.inputTokens).toBeGreaterThan(on.usage.inputTokens!);
    expect(off.warnings).toEqual([]);
  });

  it('passes sampling settings through: a seed reproduces an answer, maxOutputTokens cuts it, stopSequences end it', async () => {
    const model = createHearth(tiny)();
    const p = { model, prompt: 'Tell me a story.', temperature: 1.5, topK: 0, topP: 1, maxOutputTokens: 16 };
    const a = await generateText({ ...p, seed: 42 });
    expect(a.finishReason).toBe('length');
    expect(a.usage.outputTokens).toBe(16);
    expect((await generateText({ ...p, seed: 42 })).text).toBe(a.text);
    expect((await generateText({ ...p, seed: 43 })).text).not.toBe(a.text);
    const stop = a.text.slice(4, 8);
    const cut = await generateText({ ...p, seed: 42, stopSequences: [stop] });
    expect(cut.finishReason).toBe('stop');
    expect(a.text.startsWith(cut.text)).toBe(true);
    expect(cut.text.length).toBeLessThan(a.text.indexOf(stop) + 1);
  });

  it('streams reasoning_content as reasoning parts, before the text', async () => {
    // A random model never thinks on its own: a grammar (a Hearth option) makes it write a reasoning block first.
    const grammar = 'root ::= "<think>\\n" [a-z] [a-z ]{3,29} "\\n</think>\\n\\n" [a-z] [a-z ]{1,19}';
    const options = {
      model: createHearth(qwen3)(),
      prompt: 'Why is the sky blue?',
      seed: 1,
      temperature: 1,
      providerOptions: { hearth: { grammar } },
    };
    const direct = await qwen3.chat.completions.create({
      messages: [{ role: 'user', content: 'Why is the sky blue?' }],
      grammar,
      seed: 1,
      temperature: 1,
    });
    const r = streamText(options);
    const parts = [];
    for await (const p of r.fullStream) parts.push(p);
    expect(types(parts)).toEqual([
      'start',
      'start-step',
      'reasoning-start',
      'reasoning-delta',
      'reasoning-end',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'finish',
    ]);
    expect(await r.reasoningText).toBe(direct.choices[0]!.message.reasoning_content);
    expect(await r.text).toBe(direct.choices[0]!.message.content);
    const g = await generateText(options);
    expect([g.reasoningText, g.text]).toEqual([
      direct.choices[0]!.message.reasoning_content,
      direct.choices[0]!.message.content,
    ]);
  });
});

describe('structured output', () => {
  const person = z.object({
    name: z.string().min(1).max(10),
    age: z.number().int().min(0).max(120),
    tags: z
      .array(z.enum(['red', 'green', 'blue']))
      .min(1)
      .max(3),
  });

  it('Output.object with a zod schema gives a valid object even from a random model, 4 seeds', async () => {
    const model = createHearth(tiny)();
    for (let seed = 0; seed < 4; seed++) {
      const r = await generateText({
        model,
        prompt: 'Describe a person.',
        output: Output.object({ schema: person }),
        seed,
        temperature: 1,
      });
      // The SDK parsed and validated it (it throws NoObjectGeneratedError otherwise); check once more here.
      expect(person.parse(r.output), `seed ${seed}: ${r.text}`).toEqual(r.output);
      expect(JSON.parse(r.text)).toEqual(r.output);
    }
  });

  it('streams partial objects that end in the valid one', async () => {
    const r = streamText({
      model: createHearth(tiny)(),
      prompt: 'Describe a person.',
      output: Output.object({ schema: person }),
      seed: 7,
      temperature: 1,
    });
    const partials = [];
    for await (const p of r.partialOutputStream) partials.push(p);
    const output = await r.output;
    expect(person.parse(output)).toEqual(output);
    expect(partials.length).toBeGreaterThan(1);
    expect(partials.at(-1)).toEqual(output);
  });
});

describe('tools', () => {
  const weatherInput = z.object({ city: z.string().max(12), days: z.number().int().min(1).max(14) });
  const weather = tool({ description: 'The weather forecast for a city', inputSchema: weatherInput });

  it('toolChoice "required" yields valid tool calls from a random model, 4 seeds', async () => {
    const model = createHearth(tiny)();
    for (let seed = 0; seed < 4; seed++) {
      const r = await generateText({
        model,
        prompt: 'What is the weather in Paris this week?',
        tools: { get_weather: weather },
        toolChoice: 'required',
        seed,
        temperature: 1,
        providerOptions: { hearth: { parallel_tool_calls: false } },
      });
      expect(r.finishReason, `seed ${seed}`).toBe('tool-calls');
      expect(r.toolCalls).toHaveLength(1);
      const call = r.toolCalls[0]!;
      expect(call.toolName).toBe('get_weather');
      expect(call.invalid, `seed ${seed}`).toBeFalsy();
      expect(weatherInput.parse(call.input)).toEqual(call.input);
    }
  });

  it('streams tool input deltas, then the tool call, equal to the non-streamed one', async () => {
    const options = {
      model: createHearth(tiny)(),
      prompt: 'What is the weather in Paris this week?',
      tools: { get_weather: weather },
      toolChoice: 'required' as const,
      seed: 3,
      temperature: 1,
      providerOptions: { hearth: { parallel_tool_calls: false } },
    };
    const whole = await generateText(options);
    const r = streamText(options);
    const parts = [];
    for await (const p of r.fullStream) parts.push(p);
    expect(types(parts)).toEqual([
      'start',
      'start-step',
      'tool-input-start',
      'tool-input-delta',
      'tool-input-end',
      'tool-call',
      'finish-step',
      'finish',
    ]);
    expect(parts.filter((p) => p.type === 'tool-input-delta').length).toBeGreaterThan(3);
    const calls = await r.toolCalls;
    expect(calls.map((c) => [c.toolName, c.input])).toEqual(whole.toolCalls.map((c) => [c.toolName, c.input]));
    expect(await r.finishReason).toBe('tool-calls');
  });

  it('runs a tool loop: the tool result goes back to the model, which then answers', async () => {
    const calls: unknown[] = [];
    const withExecute = tool({
      ...weather,
      execute: async (input) => {
        calls.push(input);
        return { forecast: 'sunny', high: 24 };
      },
    });
    const r = await generateText({
      model: createHearth(hello)(),
      prompt: 'What is the weather in Paris this week?',
      tools: { get_weather: withExecute },
      // A call first (forced by a grammar), then the answer.
      prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'auto' }),
      stopWhen: stepCountIs(2),
      providerOptions: { hearth: { parallel_tool_calls: false } },
      include: { requestBody: true },
    });
    expect(r.steps).toHaveLength(2);
    const [first, second] = r.steps as [(typeof r.steps)[0], (typeof r.steps)[0]];
    expect(first.finishReason).toBe('tool-calls');
    expect(calls).toEqual([first.toolCalls[0]!.input]);
    expect(first.toolResults[0]!.output).toEqual({ forecast: 'sunny', high: 24 });
    // What the engine got the second time: the assistant's call and the tool's result, under the call's id.
    const id = first.toolCalls[0]!.toolCallId;
    const sent = (second.request.body as { messages: Array<Record<string, unknown>> }).messages;
    expect(sent.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ id, function: { name: 'get_weather' } }] });
    expect(sent.at(-1)).toEqual({ role: 'tool', tool_call_id: id, content: '{"forecast":"sunny","high":24}' });
    expect(second.text).toBe('Hello, world!');
    expect(r.text).toBe('Hello, world!');
    expect(r.totalUsage.outputTokens).toBe(first.usage.outputTokens! + 4);
  });
});

describe('embeddings and reranking', () => {
  const texts = ['the sea at night', 'fresh bread', 'stars over the hills', 'a cup of tea', 'rivers in spring'];

  it("embedMany and embed give the engine's vectors, in order, with usage", async () => {
    const model = createHearth(embedder).embeddingModel();
    const direct = await embedder.embeddings.create({ input: texts });
    const r = await embedMany({ model, values: texts });
    expect(r.embeddings).toHaveLength(texts.length);
    r.embeddings.forEach((e, i) => {
      expect(e).toHaveLength(direct.data[i]!.embedding.length);
      expect(Math.max(...e.map((x, k) => Math.abs(x - direct.data[i]!.embedding[k]!)))).toBeLessThan(1e-4);
    });
    expect(r.usage.tokens).toBe(direct.usage.prompt_tokens);
    const one = await embed({ model, value: texts[2]! });
    expect(Math.max(...one.embedding.map((x, k) => Math.abs(x - r.embeddings[2]![k]!)))).toBeLessThan(1e-4);
  });

  it("embedMany on a chat model rejects with Hearth's error", async () => {
    await expect(
      embedMany({ model: createHearth(hello).embeddingModel(), values: ['x'], maxRetries: 0 }),
    ).rejects.toMatchObject({ code: 'not_an_embedding_model' });
  });

  it('rerank orders documents as the engine does', async () => {
    const direct = await reranker.rerank({ query: 'what to drink', documents: texts });
    const r = await rerank({
      model: createHearth(reranker).rerankingModel(),
      query: 'what to drink',
      documents: texts,
      topN: 3,
    });
    expect(r.ranking.map((x) => x.originalIndex)).toEqual(direct.results.slice(0, 3).map((x) => x.index));
    expect(r.ranking[0]!.score).toBeCloseTo(direct.results[0]!.relevance_score, 5);
    expect(r.rerankedDocuments[0]).toBe(texts[direct.results[0]!.index]);
  });
});

describe('abort, errors and warnings', () => {
  // One request at a time on `tiny`: a reply that went on generating after its abort would hold the engine for
  // its 1,500 tokens, and the next call would wait behind it (decode steps counted by the engine).
  const probe = () => ({ model: createHearth(tiny)(), prompt: 'Count to ten.', temperature: 0, maxOutputTokens: 8 });
  const story = { prompt: 'Tell me a long story.', temperature: 1, seed: 1, maxOutputTokens: 1500 };
  /** The next call, failing fast if it waits behind a reply that was not stopped. */
  const next = () =>
    Promise.race([
      generateText(probe()),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('the engine is still busy with the aborted reply')), 20_000),
      ),
    ]);

  it('an abort mid-stream ends the stream with an abort, the generation stops, and the engine answers the next call', async () => {
    const before = await generateText(probe());
    const controller = new AbortController();
    const r = streamText({ model: createHearth(tiny)(), ...story, abortSignal: controller.signal });
    const parts = [];
    let deltas = 0;
    for await (const p of r.fullStream) {
      parts.push(p);
      if (p.type === 'text-delta' && ++deltas === 5) controller.abort();
    }
    const steps = inspect(tiny).profile.steps;
    expect(parts.at(-1)!.type).toBe('abort');
    expect(parts.some((p) => p.type === 'finish' || p.type === 'error')).toBe(false);
    expect(deltas).toBeLessThan(50);
    await expect(r.text).rejects.toMatchObject({ name: 'AbortError' });
    const after = await next();
    expect(after.text).toBe(before.text);
    expect(after.usage.outputTokens).toBe(8);
    expect(inspect(tiny).profile.steps - steps).toBeLessThan(30);
  });

  it('an abort during generateText rejects it with an AbortError, and the generation stops', async () => {
    const controller = new AbortController();
    const call = generateText({ model: createHearth(tiny)(), ...story, abortSignal: controller.signal, maxRetries: 0 });
    setTimeout(() => controller.abort(), 100);
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    const steps = inspect(tiny).profile.steps;
    expect((await next()).usage.outputTokens).toBe(8);
    expect(inspect(tiny).profile.steps - steps).toBeLessThan(30);
    await expect(generateText({ ...probe(), abortSignal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    });
  });

  it('an image goes to the engine as an image_url part: a model without a projector refuses it clearly', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const call = generateText({
      model: createHearth(hello)(),
      maxRetries: 0,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image', image: png, mediaType: 'image/png' },
          ],
        },
      ],
    });
    await expect(call).rejects.toThrow(InvalidRequestError);
    await expect(call).rejects.toMatchObject({ code: 'images_not_supported' });
    // Another kind of file is refused before anything runs.
    const pdf = generateText({
      model: createHearth(hello)(),
      maxRetries: 0,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'file', data: new TextEncoder().encode('%PDF-1.4 not an image'), mediaType: 'application/pdf' },
          ],
        },
      ],
    });
    await expect(pdf).rejects.toMatchObject({ code: 'unsupported_content' });
  });

  it("Hearth's request errors reach the caller", async () => {
    await expect(generateText({ model: createHearth(hello)(), prompt: 'Hi', topP: 2, maxRetries: 0 })).rejects.toThrow(
      /top_p/,
    );
  });

  it('settings Hearth cannot honour come back as warnings', async () => {
    const r = await generateText({
      model: createHearth(hello)(),
      prompt: 'Hi',
      reasoning: 'xhigh',
      providerOptions: { hearth: { conversation_id: 'warned', bogus: 1 } },
    });
    expect(r.text).toBe('Hello, world!');
    expect(r.warnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'unsupported', feature: 'providerOptions.hearth.bogus' }),
        expect.objectContaining({ type: 'compatibility', feature: 'reasoning' }),
      ]),
    );
  });
});
