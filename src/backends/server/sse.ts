// Server-sent events as OpenAI-compatible servers stream them: `data: <json>` events, ended by `data: [DONE]`.
// Only the data lines matter (no server here names events or sends retry hints); comments (`: keep-alive`) are skipped.

/** The data of each event in `body`, in order; ends at `[DONE]` or when the body ends. */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      // An event ends at a blank line; \r\n and \n are both allowed.
      for (let end = blankLine(buffer); end; end = blankLine(buffer)) {
        const event = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end.length);
        const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
        if (!data) continue;
        if (data === '[DONE]') return;
        yield data;
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function blankLine(s: string): { index: number; length: number } | null {
  const m = /\r?\n\r?\n/.exec(s);
  return m ? { index: m.index, length: m[0].length } : null;
}
