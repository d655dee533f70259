// One reply as chunks, the same for every backend: the role chunk that opens it, text cut into reasoning, content and
// tool calls (output-stream.ts) with the log-probabilities of the tokens it came from, and the final chunk with the finish
// reason ('tool_calls' when the reply made calls), usage, timings and warnings. A backend feeds it text and
// log-probabilities and sends the chunks it returns.
import { chunk, type CompletionMeta } from './completion.ts';
import type {
  ChatCompletionChunk,
  ChatMessage,
  ChunkDelta,
  FinishReason,
  Timings,
  TokenLogprob,
  Usage,
} from '../../types.ts';
import type { ParsedOutput } from './output.ts';
import { OutputStream } from './output-stream.ts';

export interface ReplyOptions {
  /** The reply format's parser (reply-plan.ts); null: the text is all content. */
  parse: ((text: string, partial: boolean) => ParsedOutput) | null;
  /** Whether the request asked for logprobs. */
  logprobs: boolean;
  parallelToolCalls: boolean;
}

export class ReplyWriter {
  private readonly output: OutputStream | null;
  private text = '';
  /** Log-probabilities of tokens whose text has not gone out in a chunk yet. */
  private logprobs: TokenLogprob[] = [];

  constructor(
    private readonly meta: CompletionMeta,
    private readonly opts: ReplyOptions,
  ) {
    this.output = opts.parse ? new OutputStream(opts.parse, opts.parallelToolCalls ? Infinity : 1) : null;
  }

  /** The chunk that opens the stream. */
  open(): ChatCompletionChunk {
    return chunk(this.meta, { role: 'assistant', content: '' });
  }

  /** A token's log-probabilities, sent with the next chunk. */
  logprob(entry: TokenLogprob) {
    if (this.opts.logprobs) this.logprobs.push(entry);
  }

  /** The chunk for more text, or null while the parser holds it back (a marker may be starting). */
  push(piece: string): ChatCompletionChunk | null {
    if (!piece) return null;
    this.text += piece;
    const delta = this.output ? this.output.push(piece) : { content: piece };
    return delta ? chunk(this.meta, delta, null, undefined, this.takeLogprobs()) : null;
  }

  /** The final chunk, and the reply as the assistant message a client sends back next turn. */
  close(
    finish: FinishReason,
    end: { usage: Usage; timings: Timings; warnings?: string[] },
  ): { chunk: ChatCompletionChunk; message: ChatMessage } {
    let message: ChatMessage = { role: 'assistant', content: this.text };
    let last: ChunkDelta = {};
    if (this.output) {
      const { delta, output } = this.output.finish();
      last = delta ?? {};
      message = { role: 'assistant', content: output.content };
      if (output.toolCalls.length) {
        message.tool_calls = output.toolCalls;
        if (finish === 'stop') finish = 'tool_calls';
      }
    }
    return { chunk: chunk(this.meta, last, finish, end, this.takeLogprobs()), message };
  }

  private takeLogprobs() {
    if (!this.opts.logprobs) return null;
    const content = this.logprobs;
    this.logprobs = [];
    return { content };
  }
}
