// The ReadableStream of text pieces that the built-in AI classes' streaming calls return (promptStreaming(),
// summarizeStreaming(), …): the engine writes only as far as the reader reads, a reader's cancel aborts the call, and
// the stream is async-iterable in every browser.
import type { ChatCompletionChunk } from '../types.ts';

/** Sends one piece once the reader wants more; throws the reason when `signal` (the call's) has aborted meanwhile. */
export type Send = (piece: string, signal: AbortSignal) => Promise<void>;

/**
 * A stream of what `write` sends. `write` gets a signal that aborts when the reader cancels (or `signal` does); the
 * stream closes when it resolves and errors with what it rejects with.
 */
export function textStream(
  signal: AbortSignal | undefined,
  write: (signal: AbortSignal, send: Send) => Promise<void>,
): ReadableStream<string> {
  const stop = new AbortController();
  const both = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  let controller!: ReadableStreamDefaultController<string>;
  let wake = () => {};
  const stream = new ReadableStream<string>(
    {
      start: (c) => void (controller = c),
      pull: () => wake(),
      cancel: () => stop.abort(),
    },
    { highWaterMark: 1 },
  );
  /** Resolves once the reader wants more (or the call ends). */
  const room = (s: AbortSignal) =>
    (controller.desiredSize ?? 0) > 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          wake = resolve;
          s.addEventListener('abort', () => resolve(), { once: true });
        });
  const send: Send = async (piece, s) => {
    await room(s);
    s.throwIfAborted();
    controller.enqueue(piece);
  };
  write(both, send)
    .then(
      () => controller.close(),
      (err) => controller.error(err),
    )
    .catch(() => {}); // the reader cancelled: the stream is closed, and nobody is there to tell
  return iterable(stream);
}

/** Sends each piece of a streamed reply's content; returns the whole text. */
export async function sendContent(
  chunks: AsyncIterable<ChatCompletionChunk>,
  send: Send,
  signal: AbortSignal,
): Promise<string> {
  let text = '';
  for await (const c of chunks) {
    const delta = c.choices[0]?.delta.content;
    if (!delta) continue;
    text += delta;
    await send(delta, signal);
  }
  return text;
}

/** The stream, async-iterable (`for await`, Array.fromAsync) as the Streams standard has it, where the browser's
 * ReadableStream is not yet (WebKitGTK 2.50). */
function iterable<T>(stream: ReadableStream<T>): ReadableStream<T> {
  if (Symbol.asyncIterator in ReadableStream.prototype) return stream;
  async function* values(this: ReadableStream<T>, { preventCancel = false } = {}) {
    const reader = this.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      if (!preventCancel) await reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }
  return Object.assign(stream, { values, [Symbol.asyncIterator]: values });
}
