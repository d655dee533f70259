// The parsed reply as a stream of deltas: each time text arrives, the output is parsed again (partial) and what it
// adds to the content, the reasoning and each tool call is sent. The final parse may still add text a partial one
// held back (a marker that turned out to be text).
import type { ChunkDelta, ToolCall } from '../../types.ts';
import type { ParsedOutput } from './output.ts';

export interface FinalOutput {
  content: string | null;
  reasoning: string;
  toolCalls: ToolCall[];
}

export class OutputStream {
  private text = '';
  private sent: ParsedOutput = { content: '', reasoning: '', calls: [] };
  private readonly ids: string[] = [];

  /** `parse(text, partial)`: parseOutput for the request's format; `maxCalls`: 1 without parallel tool calls. */
  constructor(
    private readonly parse: (text: string, partial: boolean) => ParsedOutput,
    private readonly maxCalls = Infinity,
  ) {}

  /** Adds generated text; returns the delta to send (null when there is nothing new yet). */
  push(text: string): ChunkDelta | null {
    this.text += text;
    return this.diff(this.parse(this.text, true));
  }

  /** At the end of the reply: the last delta (or null) and the whole parsed output. */
  finish(): { delta: ChunkDelta | null; output: FinalOutput } {
    const delta = this.diff(this.parse(this.text, false));
    const { content, reasoning, calls } = this.sent;
    const toolCalls = calls.map((c, i) => ({ id: this.ids[i]!, type: 'function' as const, function: { ...c } }));
    return { delta, output: { content: toolCalls.length && !content.trim() ? null : content, reasoning, toolCalls } };
  }

  private diff(next: ParsedOutput): ChunkDelta | null {
    const delta: ChunkDelta = {};
    const prev = this.sent;
    // Text already sent is never taken back: a parse that does not extend it adds nothing.
    const grow = (was: string, now: string) =>
      now.length > was.length && now.startsWith(was) ? now.slice(was.length) : '';
    const content = grow(prev.content, next.content);
    const reasoning = grow(prev.reasoning, next.reasoning);
    if (reasoning) delta.reasoning_content = reasoning;
    if (content) delta.content = content;
    const calls = next.calls.slice(0, this.maxCalls);
    const sentCalls = prev.calls.map((c) => ({ ...c }));
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!;
      const was = sentCalls[i];
      if (!was) {
        this.ids[i] ??= newCallId();
        (delta.tool_calls ??= []).push({
          index: i,
          id: this.ids[i],
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        });
        sentCalls.push({ ...call });
      } else {
        const more = grow(was.arguments, call.arguments);
        if (more) {
          (delta.tool_calls ??= []).push({ index: i, function: { arguments: more } });
          was.arguments = call.arguments;
        }
      }
    }
    this.sent = {
      content: prev.content + content,
      reasoning: prev.reasoning + reasoning,
      calls: sentCalls,
    };
    return Object.keys(delta).length ? delta : null;
  }
}

function newCallId(): string {
  let id = 'call_';
  for (let i = 0; i < 24; i++) {
    id += 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'[Math.floor(Math.random() * 62)];
  }
  return id;
}
