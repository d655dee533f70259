// Checks a chat.completions request and fills in defaults. Every problem is an InvalidRequestError that names the
// parameter and says what is allowed, thrown before the request is queued.
import type { ReplyConstraint, ResolvedRequest, ResolvedToolChoice, SamplerParams } from '../../contract.ts';
import { invalidParameter as bad } from '../../errors.ts';
import { resolveSpeculative } from '../speculative.ts';
import type { ChatCompletionCreateParams, ContentPart, Tool } from '../../types.ts';

// llama.cpp's defaults (llama-server, llama-cli): they suit small local models better than OpenAI's temperature 1.
const SAMPLING_DEFAULTS = {
  temperature: 0.8,
  topK: 40,
  topP: 0.95,
  minP: 0.05,
  repeatLastN: 64,
  repeatPenalty: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
};

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

function num(
  p: ChatCompletionCreateParams,
  key: keyof ChatCompletionCreateParams,
  min: number,
  max: number,
  fallback: number,
  integer = false,
): number {
  const v = p[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
    bad(String(key), `expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return v;
}

const isBlob = (v: unknown) => typeof Blob !== 'undefined' && v instanceof Blob;

/** A content part's shape: text anywhere; images and audio (OpenAI's image_url, input_audio) in user messages. */
function checkPart(part: ContentPart, at: string, role: string) {
  if (!part || typeof part !== 'object') bad(at, 'expected a content part object');
  if (part.type === 'text') {
    if (typeof part.text !== 'string') bad(`${at}.text`, 'expected a string');
    return;
  }
  if (part.type !== 'image_url' && part.type !== 'input_audio') {
    bad(
      `${at}.type`,
      `expected "text", "image_url" or "input_audio", got ${JSON.stringify((part as { type?: unknown }).type)}`,
    );
  }
  if (role !== 'user') bad(at, 'images and audio go in user messages');
  if (part.type === 'image_url') {
    const url = part.image_url?.url;
    if (!isBlob(url) && !(typeof url === 'string' && /^(data:|https?:\/\/)/i.test(url))) {
      bad(`${at}.image_url.url`, 'expected a data: URL, an http(s) URL, or a Blob/File');
    }
  } else {
    const { data, format } = part.input_audio ?? {};
    if (!isBlob(data) && typeof data !== 'string') {
      bad(`${at}.input_audio.data`, 'expected the file in base64, or a Blob/File');
    }
    if (!['wav', 'mp3', 'flac'].includes(format)) {
      bad(`${at}.input_audio.format`, `expected "wav", "mp3" or "flac", got ${JSON.stringify(format)}`);
    }
  }
}

/** The request checked step by step (each step names the parameter it refuses), then put together. */
export function resolveRequest(p: ChatCompletionCreateParams): ResolvedRequest {
  if (!p || typeof p !== 'object') bad('params', 'expected an object');
  checkMessages(p.messages);
  const tools = resolveTools(p);
  const toolChoice = resolveToolChoice(p, tools);
  const constraint = resolveConstraint(p);
  if (constraint && (toolChoice === 'required' || typeof toolChoice === 'object')) {
    bad('tool_choice', 'a forced tool call cannot be combined with response_format or grammar; use tool_choice "auto"');
  }
  checkStreamOptions(p.stream_options);
  if (p.conversation_id !== undefined && (typeof p.conversation_id !== 'string' || !p.conversation_id)) {
    bad('conversation_id', 'expected a non-empty string');
  }
  const { signal: _signal, onProgress: _onProgress, ...original } = p;
  return {
    original,
    messages: p.messages,
    tools,
    toolChoice,
    parallelToolCalls: p.parallel_tool_calls !== false,
    constraint,
    logprobs: resolveLogprobs(p),
    templateKwargs: resolveTemplateKwargs(p),
    maxTokens: resolveMaxTokens(p),
    stop: resolveStop(p),
    stream: p.stream === true,
    conversationId: p.conversation_id,
    ...resolveOverflow(p),
    speculative: p.speculative === undefined ? undefined : resolveSpeculative(p.speculative, 'speculative'),
    onProgress: typeof p.onProgress === 'function' ? p.onProgress : undefined,
    sampler: resolveSampler(p),
  };
}

function checkMessages(messages: ChatCompletionCreateParams['messages']): void {
  if (!Array.isArray(messages) || messages.length === 0) bad('messages', 'expected a non-empty array of messages');
  messages.forEach((m, i) => {
    if (!m || typeof m !== 'object') bad(`messages[${i}]`, 'expected an object');
    if (!ROLES.has(m.role)) {
      bad(`messages[${i}].role`, `expected one of ${[...ROLES].join(', ')}, got ${JSON.stringify(m.role)}`);
    }
    const c = m.content;
    const ok = typeof c === 'string' || c === null || (m.role === 'assistant' && c === undefined) || Array.isArray(c);
    if (!ok) bad(`messages[${i}].content`, 'expected a string or an array of content parts');
    if (Array.isArray(c)) c.forEach((part, j) => checkPart(part, `messages[${i}].content[${j}]`, m.role));
    if (m.reasoning_content != null && typeof m.reasoning_content !== 'string') {
      bad(`messages[${i}].reasoning_content`, 'expected a string');
    }
    if (m.prefix !== undefined && m.prefix !== false) {
      if (m.prefix !== true) bad(`messages[${i}].prefix`, 'expected a boolean');
      if (m.role !== 'assistant' || i !== messages.length - 1) {
        bad(`messages[${i}].prefix`, 'only the last message, an assistant one, can be a prefix for the reply');
      }
      if (m.tool_calls?.length || (Array.isArray(c) && c.some((part) => part.type !== 'text'))) {
        bad(`messages[${i}].prefix`, 'a prefix is text: it cannot hold tool calls');
      }
    }
  });
}

/** max_tokens (or max_completion_tokens); null: until the context is full. */
function resolveMaxTokens(p: ChatCompletionCreateParams): number | null {
  const max = p.max_tokens ?? p.max_completion_tokens;
  if (max === undefined || max === null) return null;
  if (!Number.isInteger(max) || max < 1) bad('max_tokens', `expected a positive integer, got ${JSON.stringify(max)}`);
  return max;
}

function resolveStop(p: ChatCompletionCreateParams): string[] {
  if (p.stop === undefined || p.stop === null) return [];
  const stop = typeof p.stop === 'string' ? [p.stop] : p.stop;
  if (!Array.isArray(stop) || stop.length > 16 || !stop.every((s) => typeof s === 'string' && s.length > 0)) {
    bad('stop', 'expected a non-empty string or an array of up to 16 non-empty strings');
  }
  return stop;
}

/** The alternatives to report beside each token (top_logprobs); null: no logprobs. */
function resolveLogprobs(p: ChatCompletionCreateParams): number | null {
  if (p.logprobs !== undefined && p.logprobs !== null && typeof p.logprobs !== 'boolean') {
    bad('logprobs', 'expected a boolean');
  }
  if (p.top_logprobs !== undefined && p.top_logprobs !== null) {
    if (!p.logprobs) bad('top_logprobs', 'needs logprobs: true');
    return num(p, 'top_logprobs', 0, 20, 0, true);
  }
  return p.logprobs ? 0 : null;
}

/** chat_template_kwargs, with reasoning_effort among them. */
function resolveTemplateKwargs(p: ChatCompletionCreateParams): Record<string, unknown> {
  const kwargs = p.chat_template_kwargs ?? {};
  if (typeof kwargs !== 'object' || Array.isArray(kwargs)) {
    bad('chat_template_kwargs', 'expected an object of template variables');
  }
  const effort = p.reasoning_effort;
  if (effort !== undefined && effort !== null && !['low', 'medium', 'high'].includes(effort)) {
    bad('reasoning_effort', `expected "low", "medium" or "high", got ${JSON.stringify(effort)}`);
  }
  return effort ? { ...kwargs, reasoning_effort: effort } : { ...kwargs };
}

function checkStreamOptions(so: ChatCompletionCreateParams['stream_options']): void {
  if (so === undefined || so === null) return;
  if (typeof so !== 'object' || Array.isArray(so)) bad('stream_options', 'expected {include_usage?: boolean}');
  if (so.include_usage !== undefined && so.include_usage !== null && typeof so.include_usage !== 'boolean') {
    bad('stream_options.include_usage', 'expected a boolean');
  }
}

/** What a full context does (context_overflow), and what a shift keeps (n_keep; null: the system prompt). */
function resolveOverflow(p: ChatCompletionCreateParams): Pick<ResolvedRequest, 'contextOverflow' | 'nKeep'> {
  const overflow = p.context_overflow ?? 'stop';
  if (overflow !== 'stop' && overflow !== 'error' && overflow !== 'shift') {
    bad('context_overflow', `expected "stop", "error" or "shift", got ${JSON.stringify(overflow)}`);
  }
  const nKeep = p.n_keep === undefined || p.n_keep === null ? null : num(p, 'n_keep', 0, 2 ** 31, 0, true);
  return { contextOverflow: overflow, nKeep };
}

function resolveSampler(p: ChatCompletionCreateParams): SamplerParams {
  const d = SAMPLING_DEFAULTS;
  const seed =
    p.seed === undefined || p.seed === null
      ? Math.floor(Math.random() * 2 ** 32)
      : num(p, 'seed', -(2 ** 53), 2 ** 53, 0, true);
  return {
    temperature: num(p, 'temperature', 0, 5, d.temperature),
    topK: num(p, 'top_k', 0, 1e6, d.topK, true),
    topP: num(p, 'top_p', 0, 1, d.topP),
    minP: num(p, 'min_p', 0, 1, d.minP),
    repeatLastN: num(p, 'repeat_last_n', 0, 1e6, d.repeatLastN, true),
    repeatPenalty: num(p, 'repeat_penalty', 0.01, 10, d.repeatPenalty),
    frequencyPenalty: num(p, 'frequency_penalty', -2, 2, d.frequencyPenalty),
    presencePenalty: num(p, 'presence_penalty', -2, 2, d.presencePenalty),
    seed: seed >>> 0,
  };
}

function resolveTools(p: ChatCompletionCreateParams): Tool[] | undefined {
  if (p.tools === undefined || p.tools === null) return undefined;
  if (!Array.isArray(p.tools)) {
    bad('tools', 'expected an array of {type: "function", function: {name, description?, parameters?}} tools');
  }
  p.tools.forEach((t, i) => {
    if (t?.type !== 'function' || !t.function || typeof t.function.name !== 'string' || !t.function.name) {
      bad(`tools[${i}]`, 'expected {type: "function", function: {name, description?, parameters?}}');
    }
    const params = t.function.parameters;
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
      bad(`tools[${i}].function.parameters`, 'expected a JSON Schema object');
    }
  });
  return p.tools.length ? p.tools : undefined;
}

function resolveToolChoice(p: ChatCompletionCreateParams, tools: Tool[] | undefined): ResolvedToolChoice {
  const c = p.tool_choice;
  if (c === undefined || c === null) return tools ? 'auto' : 'none';
  if (c === 'none') return 'none';
  if (c === 'auto' || c === 'required') {
    if (!tools && c === 'required') bad('tool_choice', '"required" needs tools');
    return tools ? c : 'none';
  }
  const name = typeof c === 'object' && c.type === 'function' ? c.function?.name : undefined;
  if (typeof name !== 'string') {
    bad('tool_choice', 'expected "auto", "none", "required" or {type: "function", function: {name}}');
  }
  if (!tools?.some((t) => t.function.name === name)) {
    bad('tool_choice', `no tool named ${JSON.stringify(name)} in tools`);
  }
  return { name };
}

/** response_format or the raw grammar, their shapes checked (a schema's keywords are checked where it becomes a
 * grammar, by the backend that samples with one: core/chat/reply-plan.ts). */
function resolveConstraint(p: ChatCompletionCreateParams): ReplyConstraint | null {
  const format = p.response_format;
  const raw = p.grammar;
  if (raw !== undefined && raw !== null && (typeof raw !== 'string' || !raw.trim())) {
    bad('grammar', 'expected GBNF text with a root rule');
  }
  if (format === undefined || format === null || format.type === 'text') return raw ? { grammar: raw } : null;
  if (raw) bad('grammar', 'give either grammar or response_format, not both');
  if (format.type === 'json_object') return { json: 'object' };
  if (format.type === 'json_schema') {
    const js = format.json_schema;
    if (!js || typeof js !== 'object') bad('response_format.json_schema', 'expected {name, schema}');
    const schema = js.schema ?? true;
    if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
      bad('response_format.json_schema.schema', 'expected a JSON Schema (an object, or true)');
    }
    return { json: 'schema', schema };
  }
  bad(
    'response_format',
    `expected {type: "text" | "json_object" | "json_schema"}, got ${JSON.stringify((format as { type?: unknown }).type)}`,
  );
}
