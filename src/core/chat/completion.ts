// Builds the OpenAI-shaped objects: streamed chunks and the assembled ChatCompletion.
import type {
  AssistantMessage,
  ChatCompletion,
  ChatCompletionChunk,
  ChoiceLogprobs,
  FinishReason,
  TokenLogprob,
  Timings,
  ToolCall,
  Usage,
} from '../../types.ts';

export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
}

export function newCompletionMeta(model: string): CompletionMeta {
  const id = `chatcmpl-${Math.random().toString(36).slice(2, 12)}${Date.now().toString(36)}`;
  return { id, created: Math.floor(Date.now() / 1000), model };
}

export function chunk(
  meta: CompletionMeta,
  delta: ChatCompletionChunk['choices'][0]['delta'],
  finish: FinishReason | null = null,
  end?: { usage: Usage; timings: Timings; warnings?: string[] },
  logprobs: ChoiceLogprobs | null = null,
): ChatCompletionChunk {
  const c: ChatCompletionChunk = {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs }],
  };
  if (end) {
    c.usage = end.usage;
    c.timings = end.timings;
    if (end.warnings?.length) c.warnings = end.warnings;
  }
  return c;
}

/**
 * The stream a caller sees, from the engine's chunks (whose finish chunk carries the usage, for CompletionAssembler):
 * the usage leaves the finish chunk and, when the caller asked with stream_options.include_usage, comes after it in
 * a chunk of its own with no choices, every chunk before it saying `usage: null` — what OpenAI documents and sends,
 * and what its SDK and the AI SDK read.
 */
export function publicChunks(includeUsage: boolean, push: (c: ChatCompletionChunk) => Promise<void>) {
  return async (c: ChatCompletionChunk) => {
    const { usage, ...rest } = c;
    await push(includeUsage ? { ...rest, usage: null } : rest);
    if (usage && includeUsage) {
      await push({ id: c.id, object: c.object, created: c.created, model: c.model, choices: [], usage });
    }
  };
}

/** Folds a chunk stream into the ChatCompletion a non-streaming call returns. */
export class CompletionAssembler {
  private content = '';
  private reasoning = '';
  private readonly calls: ToolCall[] = [];
  private logprobs: TokenLogprob[] | null = null;
  private last: ChatCompletionChunk | null = null;

  add(c: ChatCompletionChunk) {
    const choice = c.choices[0];
    const delta = choice?.delta ?? {};
    this.content += delta.content ?? '';
    this.reasoning += delta.reasoning_content ?? '';
    for (const d of delta.tool_calls ?? []) {
      const call = (this.calls[d.index] ??= {
        id: d.id ?? '',
        type: 'function',
        function: { name: '', arguments: '' },
      });
      if (d.function.name) call.function.name = d.function.name;
      call.function.arguments += d.function.arguments;
    }
    if (choice?.logprobs?.content) (this.logprobs ??= []).push(...choice.logprobs.content);
    this.last = c;
  }

  private message(): AssistantMessage {
    const message: AssistantMessage = { role: 'assistant', content: this.content, refusal: null };
    if (this.reasoning) message.reasoning_content = this.reasoning;
    if (this.calls.length) {
      message.tool_calls = this.calls;
      if (!this.content.trim()) message.content = null;
    }
    return message;
  }

  result(): ChatCompletion {
    const last = this.last;
    if (!last?.usage || !last.timings) throw new Error('the completion ended without its final chunk');
    return {
      id: last.id,
      object: 'chat.completion',
      created: last.created,
      model: last.model,
      choices: [
        {
          index: 0,
          message: this.message(),
          finish_reason: last.choices[0]?.finish_reason ?? 'stop',
          logprobs: this.logprobs ? { content: this.logprobs } : null,
        },
      ],
      usage: last.usage,
      timings: last.timings,
      ...(last.warnings ? { warnings: last.warnings } : {}),
    };
  }
}
