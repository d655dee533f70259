// Chat features through the worker in a browser: a forced tool call streamed as delta.tool_calls, JSON that follows
// a schema, logprobs, reasoning apart from the content (fixture models with random weights: grammars hold them), and
// embeddings and rerank on the embedding and reranker fixtures.
import { expect, openEngine, test } from './fixtures.ts';

test('tool calls, structured output, logprobs, reasoning, embeddings and rerank come through the worker', async ({
  harness,
}) => {
  await openEngine(harness);
  const result = await harness.evaluate(async () => {
    const e = window.engine;
    await e.load('/test-models/qwen2-tiny.gguf', { nCtx: 2048 });
    const messages = [{ role: 'user' as const, content: 'Weather in Paris?' }];
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'get_weather',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string', maxLength: 10 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
            required: ['city', 'days'],
          },
        },
      },
    ];
    const stream = await e.chat.completions.create({
      messages,
      tools,
      tool_choice: 'required',
      parallel_tool_calls: false,
      seed: 1,
      temperature: 1,
      max_tokens: 300,
      stream: true,
    });
    const call = { name: '', args: '', deltas: 0, finish: '' };
    for await (const c of stream) {
      for (const d of c.choices[0]!.delta.tool_calls ?? []) {
        call.deltas++;
        call.name += d.function.name ?? '';
        call.args += d.function.arguments;
      }
      call.finish = c.choices[0]!.finish_reason ?? call.finish;
    }
    const schema = {
      type: 'object',
      properties: { answer: { enum: ['yes', 'no'] }, confidence: { type: 'integer', minimum: 0, maximum: 100 } },
      required: ['answer', 'confidence'],
      additionalProperties: false,
    };
    const json = await e.chat.completions.create({
      messages,
      response_format: { type: 'json_schema', json_schema: { name: 'reply', schema } },
      seed: 2,
      temperature: 1,
      max_tokens: 200,
      logprobs: true,
      top_logprobs: 3,
    });
    await e.load('/test-models/qwen3-tiny.gguf', { nCtx: 2048 });
    const thought = await e.chat.completions.create({
      messages,
      grammar: 'root ::= "<think>" [a-z]{3,20} "</think>" [a-z]{2,10}',
      seed: 3,
      temperature: 1,
      max_tokens: 100,
    });
    const refusal = (err: unknown) => ({ name: (err as Error).name, code: (err as { code: string }).code });
    await e.load('/test-models/qwen3-embed.gguf');
    const embedded = await e.embeddings.create({ input: ['bread', 'the sea'] }).catch(refusal);
    await e.load('/test-models/qwen3-rerank.gguf');
    const ranked = await e.rerank({ query: 'food', documents: ['bread', 'the sea', 'stars'] }).catch(refusal);
    return { call, json: json.choices[0]!, thought: thought.choices[0]!.message, embedded, ranked };
  });
  expect(result.call).toMatchObject({ name: 'get_weather', finish: 'tool_calls' });
  expect(result.call.deltas).toBeGreaterThan(2);
  const args = JSON.parse(result.call.args);
  expect(Object.keys(args).sort()).toEqual(['city', 'days']);
  expect(args.days).toBeGreaterThanOrEqual(1);
  expect(args.days).toBeLessThanOrEqual(7);

  const value = JSON.parse(result.json.message.content!);
  expect(['yes', 'no']).toContain(value.answer);
  expect(Number.isInteger(value.confidence) && value.confidence >= 0 && value.confidence <= 100).toBe(true);
  const lp = result.json.logprobs!.content!;
  expect(lp.map((t) => t.token).join('')).toBe(result.json.message.content);
  expect(lp.every((t) => t.logprob <= 0 && t.top_logprobs.length === 3)).toBe(true);

  expect(result.thought.reasoning_content).toMatch(/^[a-z ]+$/);
  expect(result.thought.content).toMatch(/^[a-z]{2,10}$/);

  if (harness.backend === 'wllama') {
    // Not offered on this backend: a typed refusal that names the backend to use.
    expect(result.embedded).toEqual({ name: 'InvalidRequestError', code: 'unsupported_by_backend' });
    expect(result.ranked).toEqual({ name: 'InvalidRequestError', code: 'unsupported_by_backend' });
    return;
  }
  if (!('data' in result.embedded) || !('results' in result.ranked)) throw new Error('embeddings or rerank failed');
  const vectors = result.embedded.data.map((d) => d.embedding);
  expect(vectors).toHaveLength(2);
  for (const v of vectors) expect(v.reduce((s, x) => s + x * x, 0)).toBeCloseTo(1, 4);
  expect(result.ranked.results.map((r) => r.index).sort()).toEqual([0, 1, 2]);
  expect(result.ranked.results[0]!.relevance_score).toBeGreaterThanOrEqual(result.ranked.results[2]!.relevance_score);
});
