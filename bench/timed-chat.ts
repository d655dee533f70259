// One streamed chat request timed from the caller's side, the same way for every Hearth engine (the browser page's,
// Node's): prefill = prompt tokens / time to the first generated token; decode = (generated tokens - 1) / time from
// the first to the last.
import type {
  CacheOptions,
  ChatCompletionCreateParams,
  ChatMessage,
  HearthEngine,
  Progress,
  Timings,
  Usage,
} from '../src/index.ts';

/** Speed benchmarks measure prompt processing: nothing may come from a cache. */
export const NO_CACHE: CacheOptions = { persistent: false, conversations: false, systemPrompt: false };

export interface RunResult {
  promptTokens: number;
  genTokens: number;
  ttftMs: number;
  decodeMs: number;
  /** Hearth only: prompt tokens taken from the cache, from where, and how long restoring saved state took. */
  cachedTokens?: number;
  cacheSource?: string;
  restoreMs?: number;
  restoreBytes?: number;
  text?: string;
  /** Hearth only: time spent encoding images and audio (timings.media_ms). */
  mediaMs?: number;
  /** Hearth only: when the first generated text arrived (performance.now()), its usage and timings chunks. */
  firstAt?: number;
  usage?: Usage;
  timings?: Timings;
}

export async function timedChat(
  engine: Pick<HearthEngine, 'chat'>,
  messages: ChatMessage[],
  maxTokens: number,
  conversationId?: string,
  onProgress?: (p: Progress) => void,
  extra: Pick<ChatCompletionCreateParams, 'speculative'> = {},
): Promise<RunResult> {
  const t0 = performance.now();
  let tFirst = 0;
  let tLast = 0;
  let restoreStart = 0;
  let restoreEnd = 0;
  let restoreBytes = 0;
  let text = '';
  let usage: Usage | undefined;
  let timings: Timings | undefined;
  const stream = await engine.chat.completions.create({
    messages,
    max_tokens: maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    conversation_id: conversationId,
    ...extra,
    onProgress: (p) => {
      onProgress?.(p);
      if (p.phase !== 'restore') return;
      if (p.loaded === 0) restoreStart = performance.now();
      else restoreEnd = performance.now();
      restoreBytes = p.total;
    },
  });
  for await (const c of stream) {
    const piece = c.choices[0]?.delta.content;
    if (piece && !tFirst) tFirst = performance.now();
    text += piece ?? '';
    usage = c.usage ?? usage;
    timings = c.timings ?? timings;
    tLast = performance.now();
  }
  return {
    promptTokens: usage?.prompt_tokens ?? 0,
    genTokens: usage?.completion_tokens ?? 0,
    ttftMs: tFirst - t0,
    decodeMs: tLast - tFirst,
    cachedTokens: usage?.prompt_tokens_details.cached_tokens ?? 0,
    cacheSource: timings?.cache_source ?? 'none',
    restoreMs: restoreStart && restoreEnd ? restoreEnd - restoreStart : 0,
    restoreBytes,
    text,
    mediaMs: timings?.media_ms ?? 0,
    firstAt: tFirst,
    usage,
    timings,
  };
}
