// Server-sent events as OpenAI-compatible servers stream them: `data: <json>` events, ended by `data: [DONE]`.
// Only the data lines matter (no server here names events or sends retry hints); comments (`: keep-alive`) are skipped.
import { EngineError } from '../../errors.ts';

/** An event larger than this is not a chat chunk: a broken or hostile server, stopped before it fills the page's
 * memory. */
export const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/** The data of each event in `body`, in order; ends at `[DONE]` or when the body ends. */
export async function* sseData(body: ReadableStream<Uint8Array>, where: string): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  // Where the search for the blank line that ends an event resumes: each byte is scanned about once.
  let scanned = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const end = /\r?\n\r?\n/g;
        end.lastIndex = Math.max(0, scanned - 3); // a blank line may straddle two reads
        const m = end.exec(buffer);
        if (!m) {
          scanned = buffer.length;
          break;
        }
        const event = buffer.slice(0, m.index);
        buffer = buffer.slice(m.index + m[0].length);
        scanned = 0;
        const data = event
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).replace(/^ /, ''))
          .join('\n');
        if (data === '[DONE]') return;
        if (data) yield data;
      }
      if (buffer.length > MAX_EVENT_CHARS) {
        throw new EngineError(
          `the server at ${where} sent an event over ${MAX_EVENT_CHARS / 1024 / 1024} MiB: not a chat chunk`,
          'remote_bad_response',
        );
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
