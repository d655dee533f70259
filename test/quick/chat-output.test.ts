// Reading replies: reasoning and tool calls in every format the engine detects, whole and streamed. A stream is cut
// at every position (two pieces) and into single characters; its deltas must add up to what the whole reply gives.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CompletionAssembler, chunk } from '../../src/core/chat/completion.ts';
import { detectFormat, forPrompt } from '../../src/core/chat/formats.ts';
import { parseOutput, type OutputFormat } from '../../src/core/chat/output.ts';
import { OutputStream } from '../../src/core/chat/output-stream.ts';
import type { Tool } from '../../src/types.ts';
import { llamaSource } from '../../scripts/llama-source.mjs';

const templatesDir = join(llamaSource().dir, 'models', 'templates');
const template = (name: string) => readFileSync(join(templatesDir, `${name}.jinja`), 'utf8');

const TOOLS: Tool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer' } },
        required: ['city'],
      },
    },
  },
];

const format = (name: string, prompt = ''): OutputFormat => forPrompt(detectFormat(template(name)), prompt);

/** Streams `pieces` through an OutputStream and folds the chunks as a non-streaming call does. */
function stream(f: OutputFormat, pieces: string[]) {
  const s = new OutputStream((text, partial) => parseOutput(text, f, TOOLS, partial));
  const assembler = new CompletionAssembler();
  const meta = { id: 'x', created: 0, model: 'm' };
  for (const p of pieces) {
    const d = s.push(p);
    if (d) assembler.add(chunk(meta, d));
  }
  const { delta, output } = s.finish();
  const usage = {
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    prompt_tokens_details: { cached_tokens: 0 },
  };
  const timings = {
    prompt_n: 0,
    prompt_ms: 0,
    predicted_n: 0,
    predicted_ms: 0,
    cache_n: 0,
    cache_source: 'none' as const,
  };
  assembler.add(chunk(meta, delta ?? {}, 'stop', { usage, timings }));
  return { output, message: assembler.result().choices[0]!.message };
}

interface Expected {
  content: string | null;
  reasoning?: string;
  calls?: Array<[string, unknown]>;
}

/** The reply read whole, streamed in two pieces cut at every position, and streamed character by character. */
function check(f: OutputFormat, text: string, want: Expected) {
  const splits = [[text], [...text]];
  for (let i = 1; i < text.length; i++) splits.push([text.slice(0, i), text.slice(i)]);
  for (const pieces of splits) {
    const { output, message } = stream(f, pieces);
    const where = `split ${JSON.stringify(pieces.length === 2 ? pieces[0] : pieces.length)}`;
    expect(output.content, where).toBe(want.content);
    expect(output.reasoning, where).toBe(want.reasoning ?? '');
    expect(
      output.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
      where,
    ).toEqual(want.calls ?? []);
    // What the stream sent adds up to the same message.
    expect(message.content ?? null, where).toBe(want.content);
    expect(message.reasoning_content ?? '', where).toBe(want.reasoning ?? '');
    expect(message.tool_calls?.map((c) => [c.id, c.function.name, c.function.arguments]) ?? [], where).toEqual(
      output.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments]),
    );
  }
}

describe('output formats are detected from the template', () => {
  it.each([
    ['Qwen-Qwen2.5-7B-Instruct', 'hermes', null],
    ['Qwen-Qwen3-0.6B', 'hermes', '<think>'],
    ['Qwen3-Coder', 'hermes', null],
    ['meta-llama-Llama-3.2-3B-Instruct', 'llama3', null],
    ['mistralai-Mistral-Nemo-Instruct-2407', 'mistral', null],
    ['Mistral-Small-3.2-24B-Instruct-2506', 'mistral-args', null],
    ['mistralai-Ministral-3-14B-Reasoning-2512', 'mistral-args', '[THINK]'],
    ['openai-gpt-oss-120b', 'harmony', null],
    ['deepseek-ai-DeepSeek-R1-Distill-Qwen-32B', 'json', '<think>'],
    ['google-gemma-2-2b-it', 'json', null],
  ])('%s: %s calls, reasoning %s', (name, tools, think) => {
    const f = detectFormat(template(name));
    expect(f.tools).toBe(tools);
    expect(f.think?.open ?? null).toBe(think);
  });
  it('Qwen3-Coder writes XML calls', () => {
    expect(detectFormat(template('Qwen3-Coder')).xmlCalls).toBe(true);
    expect(detectFormat(template('Qwen-Qwen2.5-7B-Instruct')).xmlCalls).toBe(false);
  });
});

describe('reasoning is separated from the content', () => {
  it('<think> … </think> (Qwen3)', () => {
    check(format('Qwen-Qwen3-0.6B'), '<think>\nLet me think.\n</think>\n\nThe answer is 4.', {
      content: 'The answer is 4.',
      reasoning: 'Let me think.',
    });
  });
  it('a reply whose template opened <think> in the prompt (DeepSeek-R1)', () => {
    const f = forPrompt(detectFormat(template('deepseek-ai-DeepSeek-R1-Distill-Qwen-32B')), '<｜Assistant｜><think>\n');
    expect(f.startsInReasoning).toBe(true);
    check(f, 'Hmm, 2+2.</think>It is 4.', { content: 'It is 4.', reasoning: 'Hmm, 2+2.' });
  });
  it('a reply cut off inside its reasoning keeps it as reasoning', () => {
    check(format('Qwen-Qwen3-0.6B'), '<think>Still thinking about', { content: '', reasoning: 'Still thinking about' });
  });
  it('a reply without reasoning is all content, even when it starts like a tag', () => {
    check(format('Qwen-Qwen3-0.6B'), '<thing> is not a tag', { content: '<thing> is not a tag' });
  });
  it('[THINK] … [/THINK] (Ministral 3 Reasoning)', () => {
    check(format('mistralai-Ministral-3-14B-Reasoning-2512'), '[THINK]why[/THINK]Because.', {
      content: 'Because.',
      reasoning: 'why',
    });
  });
  it('harmony channels (gpt-oss): analysis is reasoning, final is content', () => {
    check(
      format('openai-gpt-oss-120b'),
      '<|channel|>analysis<|message|>User asks 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>',
      { content: '4', reasoning: 'User asks 2+2.' },
    );
  });
});

describe('tool calls are parsed in each format', () => {
  const paris: Array<[string, unknown]> = [['get_weather', { city: 'Paris' }]];
  it('Hermes / Qwen2.5 <tool_call> JSON, with text before it', () => {
    check(
      format('Qwen-Qwen2.5-7B-Instruct'),
      'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      { content: 'Let me check.\n', calls: paris },
    );
  });
  it('several <tool_call>s in one reply', () => {
    check(
      format('Qwen-Qwen2.5-7B-Instruct'),
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}\n</tool_call>',
      { content: null, calls: [...paris, ['get_weather', { city: 'Rome', days: 2 }]] },
    );
  });
  it('Qwen3: reasoning, then a call', () => {
    check(
      format('Qwen-Qwen3-0.6B'),
      '<think>\nNeed weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      { content: null, reasoning: 'Need weather.', calls: paris },
    );
  });
  it('Qwen3-Coder XML parameters, typed by the tool schema', () => {
    check(
      format('Qwen3-Coder'),
      '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>',
      { content: null, calls: [['get_weather', { city: 'Paris', days: 3 }]] },
    );
  });
  it('Llama 3.x JSON', () => {
    check(format('meta-llama-Llama-3.2-3B-Instruct'), '{"name": "get_weather", "parameters": {"city": "Paris"}}', {
      content: null,
      calls: paris,
    });
  });
  it('Llama 3.1 <|python_tag|> with a built-in tool call', () => {
    check(format('meta-llama-Llama-3.1-8B-Instruct'), '<|python_tag|>brave_search.call(query="weather Paris")', {
      content: null,
      calls: [['brave_search', { query: 'weather Paris' }]],
    });
  });
  it('Llama 3.x: a JSON answer that is not a call stays content', () => {
    check(format('meta-llama-Llama-3.2-3B-Instruct'), '{"answer": 4}', { content: '{"answer": 4}' });
  });
  it('Mistral Nemo [TOOL_CALLS][…]', () => {
    check(
      format('mistralai-Mistral-Nemo-Instruct-2407'),
      '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}]',
      { content: null, calls: paris },
    );
  });
  it('Mistral Small 3.2 [TOOL_CALLS]name[ARGS]{…}', () => {
    check(format('Mistral-Small-3.2-24B-Instruct-2506'), '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', {
      content: null,
      calls: paris,
    });
  });
  it('gpt-oss harmony commentary to=functions.name', () => {
    check(
      format('openai-gpt-oss-120b'),
      '<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather ' +
        '<|constrain|>json<|message|>{"city": "Paris"}<|call|>',
      { content: null, reasoning: 'Need weather.', calls: paris },
    );
  });
  it('text that only looks like the start of a marker is released as content', () => {
    check(format('Qwen-Qwen2.5-7B-Instruct'), 'a <tool or <tool_cal', { content: 'a <tool or <tool_cal' });
  });
  it('a <tool_call> that is not a call is content', () => {
    check(format('Qwen-Qwen2.5-7B-Instruct'), 'x <tool_call>nothing</tool_call> y', {
      content: 'x <tool_call>nothing</tool_call> y',
    });
  });
});

describe('streamed tool calls', () => {
  it('send the id and name once, then the arguments piece by piece', () => {
    const f = format('Qwen-Qwen2.5-7B-Instruct');
    const s = new OutputStream((text, partial) => parseOutput(text, f, TOOLS, partial));
    const text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const deltas = [...text].map((c) => s.push(c)).filter((d) => d !== null);
    const calls = deltas.flatMap((d) => d!.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
    expect(calls[0]!.id).toMatch(/^call_/);
    expect(calls.slice(1).every((c) => c.id === undefined && c.function.name === undefined)).toBe(true);
    expect(calls.length).toBeGreaterThan(5);
    expect(calls.map((c) => c.function.arguments).join('')).toBe('{"city": "Paris"}');
  });
  it('without parallel calls only the first is kept', () => {
    const f = format('Qwen-Qwen2.5-7B-Instruct');
    const s = new OutputStream((text, partial) => parseOutput(text, f, TOOLS, partial), 1);
    s.push(
      '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>',
    );
    expect(s.finish().output.toolCalls.map((c) => c.function.name)).toEqual(['a']);
  });
});
