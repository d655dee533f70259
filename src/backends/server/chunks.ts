// A server's stream chunks as Hearth's (types/chat.ts): servers differ in small ways — llama-server and vLLM name
// reasoning `reasoning_content`, Ollama and others `reasoning`; llama-server sends `timings`, others only `usage`;
// a tool call's later deltas may leave out `arguments` — and Hearth's chunk assembly expects one shape.
import type { ChatCompletionChunk, ChoiceLogprobs, ChunkDelta, FinishReason, Timings, Usage } from '../../types.ts';

export interface ServerChunk {
  id?: string;
  created?: number;
  choices?: Array<{
    delta?: {
      role?: string; content?: string | null; reasoning_content?: string | null; reasoning?: string | null;
      tool_calls?: Array<{ index?: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
    logprobs?: ChoiceLogprobs | null;
  }>;
  usage?: Partial<Usage> | null;
  timings?: Partial<Timings> | null;
  error?: { message?: string; type?: string; code?: string | number | null } | string;
}

const FINISH: Record<string, FinishReason> = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', function_call: 'tool_calls', content_filter: 'content_filter' };

/** The Hearth chunk for a server chunk with a choice; null for one without (the usage chunk, keep-alives). */
export function toChunk(raw: ServerChunk, model: string): ChatCompletionChunk | null {
  const choice = raw.choices?.[0];
  if (!choice) return null;
  const d = choice.delta ?? {};
  const delta: ChunkDelta = {};
  if (d.role === 'assistant') delta.role = 'assistant';
  if (typeof d.content === 'string') delta.content = d.content;
  const reasoning = d.reasoning_content ?? d.reasoning;
  if (typeof reasoning === 'string' && reasoning) delta.reasoning_content = reasoning;
  if (Array.isArray(d.tool_calls) && d.tool_calls.length) {
    delta.tool_calls = d.tool_calls.map((t, i) => ({
      index: t.index ?? i, ...(t.id ? { id: t.id } : {}), ...(t.type || t.id ? { type: 'function' as const } : {}),
      function: { ...(t.function?.name ? { name: t.function.name } : {}), arguments: t.function?.arguments ?? '' },
    }));
  }
  const finish = choice.finish_reason ? FINISH[choice.finish_reason] ?? 'stop' : null;
  if (!finish && !Object.keys(delta).length && !choice.logprobs?.content?.length) return null;
  return {
    id: raw.id ?? '', object: 'chat.completion.chunk', created: raw.created ?? Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: choice.logprobs ?? null }],
  };
}

/** The finish chunk with the usage and timings Hearth's last chunk carries: the server's where it sent them, else
 * measured here (the prompt's time then includes the network's). */
export function finishChunk(finish: ChatCompletionChunk, totals: Pick<ServerChunk, 'usage' | 'timings'>,
  clock: { sent: number; first: number; end: number }): ChatCompletionChunk {
  const u = totals.usage ?? {};
  const t = totals.timings ?? {};
  const cached = u.prompt_tokens_details?.cached_tokens ?? t.cache_n ?? 0;
  const promptTokens = u.prompt_tokens ?? (t.prompt_n ?? 0) + (t.cache_n ?? 0);
  const completion = u.completion_tokens ?? t.predicted_n ?? 0;
  const usage: Usage = {
    prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: u.total_tokens ?? promptTokens + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
  const timings: Timings = {
    prompt_n: t.prompt_n ?? promptTokens - cached, prompt_ms: t.prompt_ms ?? clock.first - clock.sent,
    predicted_n: t.predicted_n ?? completion, predicted_ms: t.predicted_ms ?? clock.end - clock.first,
    cache_n: cached, cache_source: cached ? 'remote' : 'none',
  };
  const warnings = totals.usage ? [] : ['the server reported no token usage (stream_options.include_usage): the counts are 0 or from its timings'];
  return { ...finish, usage, timings, ...(warnings.length ? { warnings } : {}) };
}
