// Checks a chat.completions request and fills in defaults. Every problem is an InvalidRequestError that names the
// parameter and says what is allowed, thrown before the request is queued.
import { InvalidRequestError } from '../errors.ts';
import type { ChatCompletionCreateParams, ChatMessage, Progress, Tool } from '../types.ts';

/** The sampler chain's settings (wasm/hearth.cpp builds llama.cpp's chain from them). */
export interface SamplerParams {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repeatLastN: number;
  repeatPenalty: number;
  frequencyPenalty: number;
  presencePenalty: number;
  seed: number;
}

export interface ResolvedRequest {
  messages: ChatMessage[];
  tools: Tool[] | undefined;
  /** null: until the context is full. */
  maxTokens: number | null;
  stop: string[];
  stream: boolean;
  sampler: SamplerParams;
  conversationId: string | undefined;
  contextOverflow: 'stop' | 'error' | 'shift';
  /** null: the system prompt. */
  nKeep: number | null;
  onProgress: ((p: Progress) => void) | undefined;
}

// llama.cpp's defaults (llama-server, llama-cli): they suit small local models better than OpenAI's temperature 1.
export const SAMPLING_DEFAULTS = {
  temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repeatLastN: 64, repeatPenalty: 1, frequencyPenalty: 0, presencePenalty: 0,
};

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

function bad(param: string, message: string): never {
  throw new InvalidRequestError(`${param}: ${message}`, 'invalid_parameter', { param });
}

function num(p: ChatCompletionCreateParams, key: keyof ChatCompletionCreateParams, min: number, max: number, fallback: number,
  integer = false): number {
  const v = p[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
    bad(String(key), `expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return v;
}

export function resolveRequest(p: ChatCompletionCreateParams): ResolvedRequest {
  if (!p || typeof p !== 'object') bad('params', 'expected an object');
  if (!Array.isArray(p.messages) || p.messages.length === 0) bad('messages', 'expected a non-empty array of messages');
  p.messages.forEach((m, i) => {
    if (!m || typeof m !== 'object') bad(`messages[${i}]`, 'expected an object');
    if (!ROLES.has(m.role)) bad(`messages[${i}].role`, `expected one of ${[...ROLES].join(', ')}, got ${JSON.stringify(m.role)}`);
    const c = m.content;
    const ok = typeof c === 'string' || c === null || (m.role === 'assistant' && c === undefined) ||
      (Array.isArray(c) && c.every((part) => part && part.type === 'text' && typeof part.text === 'string'));
    if (!ok) bad(`messages[${i}].content`, 'expected a string or an array of {type: "text", text} parts (images are not supported)');
    if (m.reasoning_content != null && typeof m.reasoning_content !== 'string') bad(`messages[${i}].reasoning_content`, 'expected a string');
  });

  const maxA = p.max_tokens ?? p.max_completion_tokens;
  let maxTokens: number | null = null;
  if (maxA !== undefined && maxA !== null) {
    if (!Number.isInteger(maxA) || maxA < 1) bad('max_tokens', `expected a positive integer, got ${JSON.stringify(maxA)}`);
    maxTokens = maxA;
  }

  let stop: string[] = [];
  if (p.stop !== undefined && p.stop !== null) {
    stop = typeof p.stop === 'string' ? [p.stop] : p.stop;
    if (!Array.isArray(stop) || stop.length > 16 || !stop.every((s) => typeof s === 'string' && s.length > 0)) {
      bad('stop', 'expected a non-empty string or an array of up to 16 non-empty strings');
    }
  }

  if (p.logprobs) bad('logprobs', 'not supported yet; leave it unset');
  const format = p.response_format as { type?: string } | undefined | null;
  if (format && format.type !== 'text') bad('response_format', 'only {type: "text"} is supported yet');
  if (p.tool_choice !== undefined && p.tool_choice !== null && p.tool_choice !== 'auto' && p.tool_choice !== 'none') {
    bad('tool_choice', 'only "auto" and "none" are supported yet');
  }
  if (p.tools !== undefined && !Array.isArray(p.tools)) bad('tools', 'expected an array of {type: "function", function} tools');
  if (p.conversation_id !== undefined && (typeof p.conversation_id !== 'string' || !p.conversation_id)) {
    bad('conversation_id', 'expected a non-empty string');
  }

  const overflow = p.context_overflow ?? 'stop';
  if (overflow !== 'stop' && overflow !== 'error' && overflow !== 'shift') {
    bad('context_overflow', `expected "stop", "error" or "shift", got ${JSON.stringify(overflow)}`);
  }
  const nKeep = p.n_keep === undefined || p.n_keep === null ? null : num(p, 'n_keep', 0, 2 ** 31, 0, true);

  const d = SAMPLING_DEFAULTS;
  const seed = p.seed === undefined || p.seed === null
    ? Math.floor(Math.random() * 2 ** 32)
    : num(p, 'seed', -(2 ** 53), 2 ** 53, 0, true);
  return {
    messages: p.messages,
    tools: p.tools?.length ? p.tools : undefined,
    maxTokens,
    stop,
    stream: p.stream === true,
    conversationId: p.conversation_id,
    contextOverflow: overflow,
    nKeep,
    onProgress: typeof p.onProgress === 'function' ? p.onProgress : undefined,
    sampler: {
      temperature: num(p, 'temperature', 0, 5, d.temperature),
      topK: num(p, 'top_k', 0, 1e6, d.topK, true),
      topP: num(p, 'top_p', 0, 1, d.topP),
      minP: num(p, 'min_p', 0, 1, d.minP),
      repeatLastN: num(p, 'repeat_last_n', 0, 1e6, d.repeatLastN, true),
      repeatPenalty: num(p, 'repeat_penalty', 0.01, 10, d.repeatPenalty),
      frequencyPenalty: num(p, 'frequency_penalty', -2, 2, d.frequencyPenalty),
      presencePenalty: num(p, 'presence_penalty', -2, 2, d.presencePenalty),
      seed: seed >>> 0,
    },
  };
}
