// Downloads a model's files into the store: each file in chunks fetched with HTTP range requests, several at once,
// each chunk written where it belongs as it arrives. The bytes written from the start of every chunk are the
// download's state (kept in the store's metadata), so an interrupted download resumes from there — after a reload too.
// A server that ignores ranges (200 instead of 206) gets one plain request per file, which cannot resume.
import { AbortError, ModelLoadError } from '../../errors.ts';
import { fetchOk, type WebFile } from './web-source.ts';

/** Writes into one stored file (an OPFS sync access handle, a Node file handle). */
export interface FileWriter {
  write(at: number, bytes: Uint8Array): Promise<void>;
  truncate(size: number): Promise<void>;
  /** Makes what was written durable before the metadata says it is there. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** One file's download as the store keeps it. */
export interface PartState extends WebFile {
  chunkSize: number;
  /** Bytes written from the start of each chunk. */
  done: number[];
  /** Whether the server answers range requests: null until the first answer says. */
  ranges: boolean | null;
  /** The sha256 of the bytes stored, once the whole file is (the model's identity for saved KV state). */
  hash: string | null;
}

export interface DownloadOptions {
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** Called with the number of new bytes as they are written. */
  onBytes(n: number): void;
}

/** Requests in flight at once: enough to fill a fast link through per-connection limits, few enough for a CDN. */
const PARALLEL = 4;
const RETRIES = 3;

/** A new file's state: chunks of 1–16 MiB, about 64 of them. */
export function newPartState(file: WebFile): PartState {
  const chunkSize = file.size ? Math.min(16 << 20, Math.max(1 << 20, Math.ceil(file.size / 64))) : 0;
  const chunks = file.size ? Math.max(1, Math.ceil(file.size / chunkSize)) : 1;
  return { ...file, chunkSize, done: new Array(chunks).fill(0), ranges: null, hash: null };
}

export const downloaded = (p: PartState) => p.done.reduce((a, b) => a + b, 0);

/** Whether every byte of the file is written. */
export const partComplete = (p: PartState) => p.size !== null && downloaded(p) === p.size;

/** Fetches what is missing of every part. On failure or abort, `parts` hold what was written so far. */
export async function downloadParts(
  parts: Array<{ state: PartState; writer: FileWriter }>,
  opts: DownloadOptions,
): Promise<void> {
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  const tasks: Array<() => Promise<void>> = [];
  const run = async () => {
    for (let task = tasks.shift(); task; task = tasks.shift()) await task();
  };
  try {
    // A file's first request tells whether its server takes ranges; then its other chunks share the pool.
    await Promise.all(
      parts.map(async ({ state, writer }) => {
        const missing = state.done.map((_, i) => i).filter((i) => chunkLength(state, i) > state.done[i]!);
        if (state.size === null || state.ranges === false) return whole(state, writer, signal, opts);
        if (!missing.length) return;
        const first = await chunk(state, writer, missing[0]!, signal, opts);
        if (first !== 'ok') return whole(state, writer, signal, opts, first);
        for (const i of missing.slice(1)) tasks.push(() => chunk(state, writer, i, signal, opts).then(() => {}));
      }),
    );
    await Promise.all(Array.from({ length: PARALLEL }, run));
  } catch (err) {
    stop.abort();
    if (opts.signal?.aborted) throw new AbortError('model download aborted');
    throw err;
  }
}

function chunkLength(p: PartState, i: number): number {
  if (p.size === null) return Infinity;
  return Math.min(p.chunkSize, p.size - i * p.chunkSize);
}

/**
 * Fetches the rest of chunk i with range requests, retrying where it broke off. A server that answers with the whole
 * file (200) gets that response back, to be read as the whole file.
 */
async function chunk(
  p: PartState,
  writer: FileWriter,
  i: number,
  signal: AbortSignal,
  opts: DownloadOptions,
): Promise<'ok' | Response> {
  const start = i * p.chunkSize;
  const end = start + chunkLength(p, i);
  return retrying(p, signal, async () => {
    if (start + p.done[i]! >= end) return 'ok';
    // no-store: the HTTP cache would keep a second copy, and it serialises range requests for one URL.
    const res = await fetchOk(p.url, opts, {
      signal,
      cache: 'no-store',
      headers: { Range: `bytes=${start + p.done[i]!}-${end - 1}` },
    });
    if (res.status !== 206) {
      if (p.ranges) {
        await res.body?.cancel();
        throw new ModelLoadError(
          `${p.url} stopped answering range requests; load again to start over`,
          'network_error',
          { url: p.url },
        );
      }
      p.ranges = false;
      return res;
    }
    p.ranges = true;
    await copy(res, end - start - p.done[i]!, async (bytes) => {
      await writer.write(start + p.done[i]!, bytes);
      p.done[i]! += bytes.length;
      opts.onBytes(bytes.length);
    });
    if (start + p.done[i]! < end) throw new BrokenOff();
    return 'ok';
  });
}

/**
 * One plain request for the whole file (a server without ranges, or an unknown size); starts over on a retry.
 * `first`: a response already under way for the whole file.
 */
async function whole(
  p: PartState,
  writer: FileWriter,
  signal: AbortSignal,
  opts: DownloadOptions,
  first?: Response,
): Promise<void> {
  p.ranges = false;
  let given = first;
  await retrying(p, signal, async () => {
    const before = downloaded(p);
    p.chunkSize = p.size ?? 0;
    p.done = [0];
    if (before) opts.onBytes(-before);
    await writer.truncate(0);
    const res = given ?? (await fetchOk(p.url, opts, { signal, cache: 'no-store' }));
    given = undefined;
    await copy(res, p.size ?? Infinity, async (bytes) => {
      await writer.write(p.done[0]!, bytes);
      p.done[0]! += bytes.length;
      opts.onBytes(bytes.length);
    });
    if (p.size === null) {
      p.size = p.done[0]!;
      p.chunkSize = p.size;
    } else if (p.done[0]! < p.size) {
      throw new BrokenOff();
    }
  });
}

class BrokenOff extends Error {
  constructor() {
    super('the connection closed before the end of the data');
  }
}

/** Streams a response's body to `write`, at most `limit` bytes. */
async function copy(res: Response, limit: number, write: (bytes: Uint8Array) => Promise<void>): Promise<void> {
  const reader = res.body!.getReader();
  let left = limit;
  try {
    while (left > 0) {
      const { done, value } = await reader.read();
      if (done) return;
      const bytes = value.length > left ? value.subarray(0, left) : value;
      await write(bytes);
      left -= bytes.length;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** Runs `attempt` again after network failures and bodies that broke off (1, 2, 4 s apart), never after HTTP errors. */
async function retrying<T>(p: PartState, signal: AbortSignal, attempt: () => Promise<T>): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (signal.aborted) throw new AbortError('model download aborted');
      const retryable =
        err instanceof BrokenOff ||
        (err instanceof ModelLoadError && err.code === 'network_error') ||
        err instanceof TypeError; // a body stream that failed mid-way
      if (!retryable) throw err;
      if (n === RETRIES) {
        throw new ModelLoadError(
          `the download of ${p.url} kept breaking off (${(err as Error).message}); ` +
            `${downloaded(p)} of ${p.size ?? '?'} bytes are kept: load again to resume.`,
          'network_error',
          { url: p.url },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** n));
      if (signal.aborted) throw new AbortError('model download aborted');
    }
  }
}
