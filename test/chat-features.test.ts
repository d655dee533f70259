// Chat features over the real wasm and fixture models with random weights (whatever they say, a grammar must hold
// them to it): forced tool calls, structured output, raw grammars, logprobs, reasoning, and the cache after such turns.
import Ajv from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../src/errors.ts';
import type { NodeEngine } from '../src/node.ts';
import type { ChatCompletionCreateParams, ChatMessage, Tool } from '../src/types.ts';
import { regexGrammar } from '../src/core/chat/regex-grammar.ts';
import { inspect, cachedEngine, coldEngine, testEngine } from './helpers.ts';

const ajv = new Ajv({ strict: false });

const WEATHER: Tool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather forecast for a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', maxLength: 12 },
        days: { type: 'integer', minimum: 1, maximum: 14 },
        unit: { enum: ['celsius', 'fahrenheit'] },
      },
      required: ['city', 'days'],
      additionalProperties: false,
    },
  },
};
const TIME: Tool = {
  type: 'function',
  function: {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 8 } }, required: ['zone'] },
  },
};

const ask: ChatMessage[] = [{ role: 'user', content: 'What is the weather in Paris this week?' }];

let qwen: NodeEngine; // Qwen2.5 template: <tool_call> JSON
let llama: NodeEngine; // Llama 3.2 template: bare JSON calls
let qwen3: NodeEngine; // Qwen3 template: <think> and <tool_call>

beforeAll(async () => {
  [qwen, llama, qwen3] = await Promise.all([
    testEngine('qwen2-tiny', { nCtx: 2048, persistent: false }),
    testEngine('llama3-tiny', { nCtx: 2048, persistent: false }),
    testEngine('qwen3-tiny', { nCtx: 2048, persistent: false }),
  ]);
});
afterAll(async () => {
  for (const e of [qwen, llama, qwen3]) await e?.unload();
});

const create = (e: NodeEngine, p: Omit<ChatCompletionCreateParams, 'messages'> & { messages?: ChatMessage[] }) =>
  e.chat.completions.create({ messages: ask, max_tokens: 400, ...p, stream: false });

describe('forced tool calls', () => {
  it.each([
    ['qwen2-tiny (<tool_call>)', () => qwen],
    ['llama3-tiny (JSON)', () => llama],
  ])('"required" always yields valid tool_calls: %s, 12 seeds', async (_, engine) => {
    const valid = ajv.compile(WEATHER.function.parameters!);
    for (let seed = 0; seed < 12; seed++) {
      // One call each: a random model, free to go on, may write calls until max_tokens.
      const r = await create(engine(), {
        tools: [WEATHER],
        tool_choice: 'required',
        parallel_tool_calls: false,
        seed,
        temperature: 1,
      });
      const choice = r.choices[0]!;
      expect(choice.finish_reason, `seed ${seed}`).toBe('tool_calls');
      const calls = choice.message.tool_calls!;
      expect(calls.length).toBeGreaterThan(0);
      for (const c of calls) {
        expect(c).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
        expect(c.id).toMatch(/^call_/);
        const args = JSON.parse(c.function.arguments);
        expect(valid(args), `seed ${seed}: ${c.function.arguments}`).toBe(true);
      }
    }
  });

  it('a named tool_choice calls that tool, and parallel_tool_calls: false makes one call', async () => {
    for (let seed = 0; seed < 6; seed++) {
      const r = await create(qwen, {
        tools: [WEATHER, TIME],
        tool_choice: { type: 'function', function: { name: 'get_time' } },
        parallel_tool_calls: false,
        seed,
        temperature: 1,
      });
      const calls = r.choices[0]!.message.tool_calls!;
      expect(calls).toHaveLength(1);
      expect(calls[0]!.function.name).toBe('get_time');
      expect(typeof JSON.parse(calls[0]!.function.arguments).zone).toBe('string');
    }
  });

  it('streams delta.tool_calls that add up to the non-streamed call', async () => {
    const params = { tools: [WEATHER], tool_choice: 'required' as const, seed: 3, temperature: 1 };
    const whole = await create(qwen, params);
    const stream = await qwen.chat.completions.create({ messages: ask, max_tokens: 400, ...params, stream: true });
    const calls: Array<{ id: string; name: string; args: string }> = [];
    let deltas = 0;
    let finish: string | null = null;
    for await (const c of stream) {
      for (const d of c.choices[0]!.delta.tool_calls ?? []) {
        deltas++;
        if (d.id) calls[d.index] = { id: d.id, name: d.function.name!, args: '' };
        calls[d.index]!.args += d.function.arguments;
      }
      finish = c.choices[0]!.finish_reason ?? finish;
    }
    expect(deltas).toBeGreaterThan(3);
    expect(finish).toBe('tool_calls');
    expect(calls.map((c) => [c.name, c.args])).toEqual(
      whole.choices[0]!.message.tool_calls!.map((c) => [c.function.name, c.function.arguments]),
    );
  });

  it('tool results render back, and the next turn from the cache equals a cold one', async () => {
    const cached = await cachedEngine('qwen2-tiny', { persistent: false });
    const cold = await coldEngine('qwen2-tiny');
    try {
      const system: ChatMessage = {
        role: 'system',
        content: 'You are a weather assistant. Use the tools you are given whenever they help the user.',
      };
      const first = await create(cached, {
        messages: [system, ...ask],
        tools: [WEATHER],
        tool_choice: 'required',
        temperature: 0,
      });
      const call = first.choices[0]!.message;
      const messages: ChatMessage[] = [
        system,
        ...ask,
        { role: 'assistant', content: call.content, tool_calls: call.tool_calls },
        { role: 'tool', tool_call_id: call.tool_calls![0]!.id, content: '{"forecast": "sunny", "high": 24}' },
      ];
      const p = { messages, tools: [WEATHER], temperature: 0, max_tokens: 24 };
      const again = await create(cached, p);
      const fresh = await create(cold, p);
      expect(again.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0);
      expect(again.choices[0]!.message).toEqual(fresh.choices[0]!.message);
    } finally {
      await cached.unload();
      await cold.unload();
    }
  });
});

describe('structured output', () => {
  const schema = {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 10 },
      age: { type: 'integer', minimum: 0, maximum: 120 },
      tags: { type: 'array', items: { $ref: '#/$defs/tag' }, minItems: 1, maxItems: 3 },
      home: { anyOf: [{ $ref: '#/$defs/place' }, { type: 'null' }] },
      score: { type: 'number', minimum: 0 },
      rating: { type: 'number', exclusiveMinimum: 0, maximum: 5 },
      ok: { type: 'boolean' },
    },
    required: ['name', 'age', 'tags', 'home', 'rating'],
    additionalProperties: false,
    $defs: {
      tag: { enum: ['red', 'green', 'blue', 42] },
      place: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 8 }, zip: { const: '75001' } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  };

  it('json_schema: the reply parses and validates, 20 seeds', async () => {
    const valid = ajv.compile(schema);
    for (let seed = 0; seed < 20; seed++) {
      const r = await create(qwen, {
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema } },
        seed,
        temperature: 1,
      });
      const text = r.choices[0]!.message.content!;
      expect(r.choices[0]!.finish_reason, `seed ${seed}: ${text}`).toBe('stop');
      expect(valid(JSON.parse(text)), `seed ${seed}: ${text} ${JSON.stringify(valid.errors)}`).toBe(true);
    }
  });

  it('json_object: the reply is a JSON object, or one cut off by max_tokens, 4 seeds', async () => {
    // A random model under the bare object grammar writes strings that rarely end: a reply cut off at max_tokens must
    // still be the start of a JSON object, which closeJson completes.
    for (let seed = 0; seed < 4; seed++) {
      const r = await create(llama, {
        response_format: { type: 'json_object' },
        seed,
        temperature: 1,
        max_tokens: 120,
      });
      const text = r.choices[0]!.message.content!;
      const value = JSON.parse(r.choices[0]!.finish_reason === 'length' ? closeJson(text) : text);
      expect(typeof value === 'object' && value !== null && !Array.isArray(value), text).toBe(true);
    }
    expect(() => JSON.parse(closeJson('{"a": [1, {"b'))).not.toThrow();
    expect(() => JSON.parse(closeJson('{"a": x'))).toThrow(); // not a JSON prefix: stays invalid
  });

  it('a raw GBNF grammar is followed', async () => {
    for (let seed = 0; seed < 5; seed++) {
      const r = await create(qwen, { grammar: 'root ::= ("yes" | "no") " because " [a-z]{3,8}', seed, temperature: 1 });
      expect(r.choices[0]!.message.content).toMatch(/^(yes|no) because [a-z]{3,8}$/);
    }
  });

  it('an invalid schema or grammar is an InvalidRequestError before anything runs, and the engine goes on', async () => {
    const bad = (p: Partial<ChatCompletionCreateParams>) => create(qwen, p);
    await expect(
      bad({
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'x', schema: { type: 'string', pattern: '^a+$' } },
        },
      }),
    ).rejects.toThrow(/pattern.*not supported/);
    await expect(
      bad({
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { $ref: '#/$defs/missing' } } },
      }),
    ).rejects.toThrow(InvalidRequestError);
    await expect(bad({ grammar: 'root ::= "a" undefined-rule' })).rejects.toThrow(InvalidRequestError);
    await expect(bad({ grammar: 'root ::= ("a"' })).rejects.toThrow(/grammar/);
    await expect(
      bad({ tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'nope' } } }),
    ).rejects.toThrow(/tool_choice/);
    const r = await create(qwen, { grammar: 'root ::= "fine"' });
    expect(r.choices[0]!.message.content).toBe('fine');
  });
});

describe('a reply that continues a prefix (the last message, an assistant one, with prefix: true)', () => {
  it('goes on from the prefix as the model would have gone on from its own first tokens', async () => {
    const plain = await create(qwen, { temperature: 0, max_tokens: 12, logprobs: true });
    const tokens = plain.choices[0]!.logprobs!.content!.map((e) => e.token);
    const prefix = tokens.slice(0, 2).join('');
    const r = await create(qwen, {
      messages: [...ask, { role: 'assistant', content: prefix, prefix: true }],
      temperature: 0,
      max_tokens: 10,
    });
    expect(prefix + r.choices[0]!.message.content).toBe(plain.choices[0]!.message.content);
  });

  it('a grammar takes the prefix first, and refuses a prefix it does not allow', async () => {
    // A RegExp as the Prompt API gives it, made a grammar and run by llama.cpp's own sampler.
    const grammar = regexGrammar(/(yes|no), because [a-z]{3,8}/, 'grammar');
    for (let seed = 0; seed < 3; seed++) {
      const r = await create(qwen, {
        messages: [...ask, { role: 'assistant', content: 'no, be', prefix: true }],
        grammar,
        seed,
        temperature: 1,
      });
      expect(`no, be${r.choices[0]!.message.content}`).toMatch(/^no, because [a-z]{3,8}$/);
    }
    await expect(
      create(qwen, { messages: [...ask, { role: 'assistant', content: 'maybe', prefix: true }], grammar }),
    ).rejects.toMatchObject({ name: 'InvalidRequestError', code: 'invalid_prefix' });
    await expect(
      create(qwen, { messages: [{ role: 'assistant', content: 'a', prefix: true }, ...ask] }),
    ).rejects.toMatchObject({ code: 'invalid_parameter', details: { param: 'messages[0].prefix' } });
    const r = await create(qwen, { grammar: 'root ::= "fine"' });
    expect(r.choices[0]!.message.content).toBe('fine');
  });
});

describe('logprobs', () => {
  it('give each token its log-probability from the logits before sampling, with the top alternatives', async () => {
    const r = await create(qwen, { logprobs: true, top_logprobs: 5, temperature: 0, max_tokens: 12 });
    const entries = r.choices[0]!.logprobs!.content!;
    expect(entries).toHaveLength(r.usage.completion_tokens);
    expect(entries.map((e) => e.token).join('')).toBe(r.choices[0]!.message.content);
    // The prompt's logits, log-softmaxed here in doubles: the first token's figures must match.
    const { logits } = await inspect(qwen).promptLogits({ messages: ask });
    const max = logits.reduce((m, v) => Math.max(m, v), -Infinity);
    const lse = max + Math.log(logits.reduce((s, v) => s + Math.exp(v - max), 0));
    const first = entries[0]!;
    const firstId = logits.indexOf(max);
    expect(first.logprob).toBeCloseTo(logits[firstId]! - lse, 4);
    for (const e of entries) {
      // Greedy: the chosen token is the likeliest.
      expect(e.top_logprobs).toHaveLength(5);
      expect(e.top_logprobs[0]!.token).toBe(e.token);
      expect(e.top_logprobs[0]!.logprob).toBe(e.logprob);
      expect(e.top_logprobs.every((t, i) => i === 0 || t.logprob <= e.top_logprobs[i - 1]!.logprob)).toBe(true);
      expect(e.top_logprobs.reduce((s, t) => s + Math.exp(t.logprob), 0)).toBeLessThanOrEqual(1 + 1e-5);
      expect(new TextDecoder().decode(new Uint8Array(e.bytes!))).toBe(e.token);
    }
  });

  it('come with the chunks that carry their tokens when streaming', async () => {
    const stream = await qwen.chat.completions.create({
      messages: ask,
      max_tokens: 10,
      logprobs: true,
      temperature: 0,
      stream: true,
    });
    let text = '';
    let tokens = '';
    for await (const c of stream) {
      text += c.choices[0]!.delta.content ?? '';
      tokens += (c.choices[0]!.logprobs?.content ?? []).map((e) => e.token).join('');
      expect((c.choices[0]!.logprobs?.content ?? []).every((e) => e.top_logprobs.length === 0)).toBe(true);
    }
    expect(tokens).toBe(text);
  });

  it('are refused out of range', async () => {
    await expect(create(qwen, { logprobs: true, top_logprobs: 21 })).rejects.toThrow(/top_logprobs/);
    await expect(create(qwen, { top_logprobs: 2 })).rejects.toThrow(/needs logprobs/);
  });
});

describe('reasoning', () => {
  // A random model never thinks on its own: a grammar makes it write a reasoning block, then an answer.
  const think = 'root ::= "<think>\\n" [a-z] [a-z ]{3,29} "\\n</think>\\n\\n" [a-z] [a-z ]{1,19}';

  it('<think> goes to reasoning_content, streamed as delta.reasoning_content; content excludes it', async () => {
    const r = await create(qwen3, { grammar: think, seed: 1, temperature: 1 });
    const m = r.choices[0]!.message;
    expect(m.reasoning_content).toMatch(/^[a-z][a-z ]{0,29}$/);
    expect(m.content).toMatch(/^[a-z ]{2,20}$/);
    const stream = await qwen3.chat.completions.create({
      messages: ask,
      max_tokens: 400,
      grammar: think,
      seed: 1,
      temperature: 1,
      stream: true,
    });
    let reasoning = '';
    let content = '';
    for await (const c of stream) {
      reasoning += c.choices[0]!.delta.reasoning_content ?? '';
      content += c.choices[0]!.delta.content ?? '';
    }
    expect([reasoning, content]).toEqual([m.reasoning_content, m.content]);
  });

  it('enable_thinking: false reaches the template (Qwen3 then writes an empty reasoning block itself)', async () => {
    const on = inspect(qwen3).prompt({ messages: ask }).text;
    const off = inspect(qwen3).prompt({ messages: ask, chat_template_kwargs: { enable_thinking: false } }).text;
    expect(on.endsWith('<|im_start|>assistant\n')).toBe(true);
    expect(off.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
  });

  it('after a reasoning turn, the next turn from the cache equals a cold one', async () => {
    const cached = await cachedEngine('qwen3-tiny', { persistent: false });
    const cold = await coldEngine('qwen3-tiny');
    try {
      const system: ChatMessage = {
        role: 'system',
        content: 'You are a careful assistant. Think before you answer, then answer briefly and clearly.',
      };
      const first = await create(cached, { messages: [system, ...ask], grammar: think, seed: 2, temperature: 1 });
      const m = first.choices[0]!.message;
      const messages: ChatMessage[] = [
        system,
        ...ask,
        { role: 'assistant', content: m.content, reasoning_content: m.reasoning_content },
        { role: 'user', content: 'And tomorrow?' },
      ];
      const again = await create(cached, { messages, temperature: 0, max_tokens: 24 });
      const fresh = await create(cold, { messages, temperature: 0, max_tokens: 24 });
      expect(again.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0);
      expect(again.choices[0]!.message).toEqual(fresh.choices[0]!.message);
    } finally {
      await cached.unload();
      await cold.unload();
    }
  });
});

/** Completes the start of a JSON text: closes an open string, gives a dangling key or colon a null value, drops a
 * trailing comma, and closes open arrays and objects. Anything that is not a JSON prefix stays invalid. */
function closeJson(text: string): string {
  const open: string[] = [];
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') open.push(c === '{' ? '}' : ']');
    else if (c === '}' || c === ']') open.pop();
  }
  let out = text.replace(/\\$/, '') + (inString ? '"' : '');
  out = out.trimEnd().replace(/,$/, '');
  if (out.endsWith(':')) out += 'null';
  else if (open.at(-1) === '}' && /[{,]\s*"(?:[^"\\]|\\.)*"$/.test(out)) out += ':null';
  return out + open.reverse().join('');
}
