// A server's stream chunks as Hearth's (types/chat.ts): servers differ in small ways — llama-server and vLLM name
// reasoning `reasoning_content`, Ollama and others `reasoning`; llama-server sends `timings`, others only `usage`;
// a tool call's later deltas may leave out `arguments` — and Hearth's chunk assembly expects one shape.
import { EngineError } from '../../errors.ts';
import type { ChatCompletionChunk, ChoiceLogprobs, ChunkDelta, FinishReason, Timings, Usage } from '../../types.ts';

/** More tool calls than this in one reply is not an answer: a broken or hostile server. */
const MAX_TOOL_CALLS = 128;

export interface ServerChunk {
  id?: string;
  created?: number;
  choices?: Array<{
    delta?: {
      role?: string;
      content?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: Array<{
        index?: number;
        id?: string;
        type?: string;
        function?: { name?: string; arguments?: string };
      }>;
    };
    finish_reason?: string | null;
    logprobs?: ChoiceLogprobs | null;
  }>;
  usage?: Partial<Usage> | null;
  timings?: Partial<Timings> | null;
  error?: { message?: string; type?: string; code?: string | number | null } | string;
}

const FINISH: Record<string, FinishReason> = {
  stop: 'stop',
  length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  content_filter: 'content_filter',
};

/** The Hearth chunk for a server chunk with a choice; null for one without (the usage chunk, keep-alives). */
export function toChunk(raw: ServerChunk, model: string, where: string): ChatCompletionChunk | null {
  const bad = (what: string) => new EngineError(`the server at ${where} streamed ${what}`, 'remote_bad_response');
  if (!raw || typeof raw !== 'object') throw bad('a chunk that is not an object');
  const choice = Array.isArray(raw.choices) ? raw.choices[0] : undefined;
  if (!choice || typeof choice !== 'object') return null;
  const d = choice.delta && typeof choice.delta === 'object' ? choice.delta : {};
  const delta: ChunkDelta = {};
  if (d.role === 'assistant') delta.role = 'assistant';
  if (typeof d.content === 'string') delta.content = d.content;
  const reasoning = d.reasoning_content ?? d.reasoning;
  if (typeof reasoning === 'string' && reasoning) delta.reasoning_content = reasoning;
  if (Array.isArray(d.tool_calls) && d.tool_calls.length) {
    delta.tool_calls = d.tool_calls.map((t, i) => {
      const index = t?.index ?? i;
      if (!Number.isInteger(index) || index < 0 || index >= MAX_TOOL_CALLS) {
        throw bad(`a tool call index of ${JSON.stringify(index)}`);
      }
      const { id, function: f } = t;
      return {
        index,
        ...(typeof id === 'string' && id ? { id } : {}),
        ...(t.type || id ? { type: 'function' as const } : {}),
        function: {
          ...(typeof f?.name === 'string' && f.name ? { name: f.name } : {}),
          arguments: typeof f?.arguments === 'string' ? f.arguments : '',
        },
      };
    });
  }
  const reason = choice.finish_reason;
  const finish = reason
    ? typeof reason === 'string' && Object.hasOwn(FINISH, reason)
      ? FINISH[reason]!
      : 'stop'
    : null;
  if (!finish && !Object.keys(delta).length && !choice.logprobs?.content?.length) return null;
  return {
    id: typeof raw.id === 'string' ? raw.id : '',
    object: 'chat.completion.chunk',
    model,
    created: Number.isFinite(raw.created) ? raw.created! : Math.floor(Date.now() / 1000),
    choices: [
      {
        index: 0,
        delta,
        finish_reason: finish,
        logprobs: Array.isArray(choice.logprobs?.content) ? choice.logprobs! : null,
      },
    ],
  };
}

/** The finish chunk with the usage and timings Hearth's last chunk carries: the server's where it sent them, else
 * measured here (the prompt's time then includes the network's). */
export function finishChunk(
  finish: ChatCompletionChunk,
  totals: Pick<ServerChunk, 'usage' | 'timings'>,
  clock: { sent: number; first: number; end: number },
): ChatCompletionChunk {
  // Counts from a server are numbers only when they are: anything else is taken as not sent.
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);
  const u = totals.usage ?? {};
  const t = totals.timings ?? {};
  const cached = n(u.prompt_tokens_details?.cached_tokens) ?? n(t.cache_n) ?? 0;
  const promptTokens = n(u.prompt_tokens) ?? (n(t.prompt_n) ?? 0) + (n(t.cache_n) ?? 0);
  const completion = n(u.completion_tokens) ?? n(t.predicted_n) ?? 0;
  const usage: Usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: n(u.total_tokens) ?? promptTokens + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
  const timings: Timings = {
    prompt_n: n(t.prompt_n) ?? promptTokens - cached,
    prompt_ms: n(t.prompt_ms) ?? clock.first - clock.sent,
    predicted_n: n(t.predicted_n) ?? completion,
    predicted_ms: n(t.predicted_ms) ?? clock.end - clock.first,
    cache_n: cached,
    cache_source: cached ? 'remote' : 'none',
  };
  const warnings = totals.usage
    ? []
    : ['the server reported no token usage (stream_options.include_usage): the counts are 0 or from its timings'];
  return { ...finish, usage, timings, ...(warnings.length ? { warnings } : {}) };
}
