// Hearth's chunk stream as the AI SDK's v4 stream parts, in the order the spec wants: stream-start (with the
// warnings), response-metadata, then blocks — reasoning-start/delta/end, text-start/delta/end, tool-input-start/
// delta/end followed by its tool-call — and finish last, with the usage from the chunk that ends the stream.
import type { LanguageModelV4StreamPart, SharedV4Warning } from '@ai-sdk/provider';
import type { ChatCompletionChunk, FinishReason, Timings, Usage } from '../types.ts';
import { hearthMetadata, toFinishReason, toUsage } from './convert.ts';

export interface StreamOptions {
  warnings: SharedV4Warning[];
  includeRawChunks: boolean;
  /** Sees the model name the first chunk carries. */
  onModel(name: string): void;
}

/**
 * A pull stream: the next chunk is read only when the reader wants more, so a slow reader slows the generation
 * (the engine's own back-pressure). Cancelling it (the SDK does when its consumer stops) ends the iteration, which
 * aborts the generation.
 */
export function toStreamParts(
  chunks: AsyncIterable<ChatCompletionChunk>,
  options: StreamOptions,
): ReadableStream<LanguageModelV4StreamPart> {
  const it = chunks[Symbol.asyncIterator]();
  const parts = new PartWriter(options);
  let cancelled = false;
  return new ReadableStream<LanguageModelV4StreamPart>({
    start(controller) {
      controller.enqueue({ type: 'stream-start', warnings: options.warnings });
    },
    async pull(controller) {
      try {
        for (;;) {
          const next = await it.next();
          // Cancelled while waiting: the iteration ended because of it, and nothing more may be enqueued.
          if (cancelled) return;
          const out = next.done ? parts.end() : parts.add(next.value);
          for (const p of out) controller.enqueue(p);
          if (next.done) return controller.close();
          if (out.length) return;
        }
      } catch (err) {
        // An AbortError stays one (name 'AbortError'), which the SDK turns into its abort part.
        if (!cancelled) controller.error(err);
      }
    },
    async cancel() {
      cancelled = true;
      await it.return?.();
    },
  });
}

interface OpenCall {
  id: string;
  name: string;
  args: string;
}

class PartWriter {
  private first = true;
  /** The open text or reasoning block, and a counter for block ids. */
  private block: { kind: 'text' | 'reasoning'; id: string } | null = null;
  private blocks = 0;
  private readonly calls = new Map<number, OpenCall>();
  private finish: FinishReason | null = null;
  private timings: Timings | undefined;
  private usage: Usage | undefined;
  private engineWarnings: string[] | undefined;
  private reasoned = false;

  constructor(private readonly options: StreamOptions) {}

  add(c: ChatCompletionChunk): LanguageModelV4StreamPart[] {
    const out: LanguageModelV4StreamPart[] = [];
    if (this.first) {
      this.first = false;
      this.options.onModel(c.model);
      out.push({ type: 'response-metadata', id: c.id, modelId: c.model, timestamp: new Date(c.created * 1000) });
    }
    if (this.options.includeRawChunks) out.push({ type: 'raw', rawValue: c });
    if (c.usage) this.usage = c.usage;
    const choice = c.choices[0];
    if (!choice) return out;
    const delta = choice.delta;
    if (delta.reasoning_content) {
      this.reasoned = true;
      out.push(...this.open('reasoning'), {
        type: 'reasoning-delta',
        id: this.block!.id,
        delta: delta.reasoning_content,
      });
    }
    if (delta.content) out.push(...this.open('text'), { type: 'text-delta', id: this.block!.id, delta: delta.content });
    for (const d of delta.tool_calls ?? []) {
      let call = this.calls.get(d.index);
      // A delta with another id starts another call; some servers repeat a call's id on each of its deltas.
      if (!call || (d.id && d.id !== call.id)) {
        // Calls stream one after another: a new one means the ones before it are complete.
        out.push(...this.close(), ...this.endCalls());
        call = { id: d.id ?? `call_${d.index}`, name: d.function.name ?? '', args: '' };
        this.calls.set(d.index, call);
        out.push({ type: 'tool-input-start', id: call.id, toolName: call.name });
      }
      if (d.function.arguments) {
        call.args += d.function.arguments;
        out.push({ type: 'tool-input-delta', id: call.id, delta: d.function.arguments });
      }
    }
    if (choice.finish_reason) {
      this.finish = choice.finish_reason;
      this.timings = c.timings;
      this.engineWarnings = c.warnings;
      out.push(...this.close(), ...this.endCalls());
    }
    return out;
  }

  end(): LanguageModelV4StreamPart[] {
    return [
      ...this.close(),
      ...this.endCalls(),
      {
        type: 'finish',
        finishReason: toFinishReason(this.finish),
        usage: toUsage(this.usage, this.reasoned),
        providerMetadata: hearthMetadata(this.timings, this.usage, this.engineWarnings),
      },
    ];
  }

  /** Starts a block of this kind unless one is open; a block of the other kind ends first. */
  private open(kind: 'text' | 'reasoning'): LanguageModelV4StreamPart[] {
    if (this.block?.kind === kind) return [];
    const out = this.close();
    this.block = { kind, id: `${kind}-${this.blocks++}` };
    out.push({ type: kind === 'text' ? 'text-start' : 'reasoning-start', id: this.block.id });
    return out;
  }

  private close(): LanguageModelV4StreamPart[] {
    const b = this.block;
    this.block = null;
    return b ? [{ type: b.kind === 'text' ? 'text-end' : 'reasoning-end', id: b.id }] : [];
  }

  private endCalls(): LanguageModelV4StreamPart[] {
    const out: LanguageModelV4StreamPart[] = [];
    for (const call of this.calls.values()) {
      out.push({ type: 'tool-input-end', id: call.id });
      // The SDK parses the input as JSON: a call without arguments is an empty object.
      out.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.args || '{}' });
    }
    this.calls.clear();
    return out;
  }
}
