// Builds the OpenAI-shaped objects: streamed chunks and the assembled ChatCompletion.
import type { ChatCompletion, ChatCompletionChunk, FinishReason, Timings, Usage } from '../types.ts';

export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
}

export function newCompletionMeta(model: string): CompletionMeta {
  const id = `chatcmpl-${Math.random().toString(36).slice(2, 12)}${Date.now().toString(36)}`;
  return { id, created: Math.floor(Date.now() / 1000), model };
}

export function chunk(meta: CompletionMeta, delta: ChatCompletionChunk['choices'][0]['delta'],
  finish: FinishReason | null = null, end?: { usage: Usage; timings: Timings; warnings?: string[] }): ChatCompletionChunk {
  const c: ChatCompletionChunk = {
    id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  };
  if (end) {
    c.usage = end.usage;
    c.timings = end.timings;
    if (end.warnings?.length) c.warnings = end.warnings;
  }
  return c;
}

/** Folds a chunk stream into the ChatCompletion a non-streaming call returns. */
export class CompletionAssembler {
  private content = '';
  private last: ChatCompletionChunk | null = null;

  add(c: ChatCompletionChunk) {
    this.content += c.choices[0]?.delta.content ?? '';
    this.last = c;
  }

  result(): ChatCompletion {
    const last = this.last;
    if (!last?.usage || !last.timings) throw new Error('the completion ended without its final chunk');
    return {
      id: last.id, object: 'chat.completion', created: last.created, model: last.model,
      choices: [{
        index: 0,
        message: { role: 'assistant', content: this.content },
        finish_reason: last.choices[0]?.finish_reason ?? 'stop',
        logprobs: null,
      }],
      usage: last.usage,
      timings: last.timings,
      ...(last.warnings ? { warnings: last.warnings } : {}),
    };
  }
}
