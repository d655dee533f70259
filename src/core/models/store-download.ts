// A model downloaded into the model store (store.ts), or resumed where it stopped, into its folder on a platform
// (store-backend.ts): the parts fetched in parallel (download.ts) while the record is saved every second, with the
// download's progress and speed. Nothing is complete until checked: its announced size against the engine's limit
// before any byte comes, its first bytes as they arrive (a web page instead of a model is stopped at once), the space
// left, then its size, format (a GGUF header) and sha256; a file that fails a check is deleted.
import { ModelLoadError, type ModelLoadErrorCode } from '../../errors.ts';
import type { Progress } from '../../types.ts';
import { checkModelFile, tooLarge } from './check.ts';
import { notGgufStart } from '../gguf/reader.ts';
import type { ModelFile } from './file.ts';
import { downloaded, downloadParts, type FileWriter, newPartState, partComplete, type PartState } from './download.ts';
import { type FetchOptions, fileName, type WebFile, webModel, type WebSource } from './web-source.ts';
import { sha256Hex } from './sha256.ts';
import { formatBytes } from '../bytes.ts';
import { type Recorder, STORE_VERSION, type StoreBackend, type StoreMeta } from './store-backend.ts';

/** Metadata saves during a download: what a reload loses at most. */
const SAVE_EVERY_MS = 1000;
const PROGRESS_EVERY_MS = 100;
/** The download speed is measured over this window. */
const SPEED_WINDOW_MS = 3000;

/** A download's failures that are the file's fault: what came of it is deleted (others keep it, to resume). */
const BAD_FILE: ReadonlySet<ModelLoadErrorCode> = new Set([
  'not_gguf',
  'truncated',
  'invalid_file',
  'too_large',
  'size_mismatch',
  'checksum_mismatch',
]);

/** What the store needs to know beyond the source: the engine's model size limit, and what kind of file it is. */
export interface StoreOptions extends FetchOptions {
  maxBytes?: number;
  /** Default GGUF: a model. */
  format?: StoredFormat;
}

/** How the store checks a kind of file: its first bytes as they arrive, then the whole file once downloaded. */
export interface StoredFormat {
  /** 'a GGUF model': what an error says the file is not. */
  what: string;
  /** Why the first bytes show the file is not of this kind, or null. */
  start(head: Uint8Array): string | null;
  /** Throws ModelLoadError (a BAD_FILE code: the file is deleted) when the downloaded file is not usable. */
  check(files: ModelFile, opts: StoreOptions): Promise<void>;
}

export const GGUF_FORMAT: StoredFormat = {
  what: 'a GGUF model',
  start: notGgufStart,
  check: (files, opts) => checkModelFile(files, opts.maxBytes ?? Infinity, { signal: opts.signal, tensorTypes: false }),
};

/** Downloads (or resumes) the model and checks it; returns its complete record. */
export async function fetchModel(
  backend: StoreBackend,
  source: WebSource,
  key: string,
  stored: StoreMeta | null,
  opts: StoreOptions,
): Promise<StoreMeta> {
  const web = await webModel(source, opts);
  const announced = web.files.reduce((n, f) => n + (f.size ?? 0), 0);
  if (opts.maxBytes !== undefined && announced > opts.maxBytes) {
    throw tooLarge(web.files[0]!.name, announced, opts.maxBytes);
  }
  await opts.checkBefore?.(web.files);
  let meta = stored;
  if (!meta || !sameFiles(meta.parts, web.files)) {
    if (meta) await backend.remove(key); // the server's files changed since: start over
    const now = Date.now();
    meta = {
      version: STORE_VERSION,
      id: web.id,
      parts: web.files.map(newPartState),
      complete: false,
      verified: false,
      createdAt: now,
      lastUsed: now,
    };
  }
  await checkSpace(backend, meta);
  // Every file the download writes is opened before it starts, and the record stays open until the checked record is
  // written: in Chromium, opening an OPFS file while others are written or read was seen to wait for ever (incognito
  // profiles, as in Playwright; a first visit stuck after "Checking the download").
  const recorder = await backend.recorder(key);
  const writers: FileWriter[] = [];
  try {
    await recorder.write(meta); // before any data: a folder always has its record
    writers.push(
      ...(await Promise.all(
        meta.parts.map(async (p) => startChecked(await backend.writer(key, p.name), p, opts.format ?? GGUF_FORMAT)),
      )),
    );
    await download(meta, recorder, writers, opts);
    await Promise.all(writers.splice(0).map((w) => w.close())); // read back by the check
    const checked = { ...(await check(backend, key, meta, opts)), lastUsed: Date.now() };
    await recorder.write(checked);
    await recorder.close();
    return checked;
  } catch (err) {
    await Promise.all([recorder, ...writers].map((w) => w.close().catch(() => {})));
    if (err instanceof ModelLoadError && BAD_FILE.has(err.code)) await backend.remove(key);
    throw err;
  }
}

async function download(meta: StoreMeta, recorder: Recorder, writers: FileWriter[], opts: FetchOptions) {
  const progress = new DownloadProgress(meta, opts.onProgress);
  // Saves flush the files first, so the record never counts a byte that is not on disk.
  let saving = Promise.resolve();
  const save = () => {
    const snapshot: StoreMeta = JSON.parse(JSON.stringify(meta));
    saving = saving.then(async () => {
      await Promise.all(writers.map((w) => w.flush()));
      await recorder.write(snapshot);
    });
    return saving;
  };
  const timer = setInterval(() => void save().catch(() => {}), SAVE_EVERY_MS);
  try {
    await downloadParts(
      meta.parts.map((state, i) => ({ state, writer: writers[i]! })),
      {
        signal: opts.signal,
        fetch: opts.fetch,
        onBytes: (n) => progress.add(n),
      },
    );
  } catch (err) {
    throw await downloadError(err, meta);
  } finally {
    clearInterval(timer);
    progress.end();
    await save().catch(() => {});
  }
}

/**
 * Sizes, the engine's limit and the format's check (a model's GGUF header: the tensor data it promises is all
 * there), then the sha256 of every file: against the source's where it gave one, and kept as the model's identity.
 * A ModelLoadError here is the file's fault (the caller deletes it).
 */
async function check(backend: StoreBackend, key: string, meta: StoreMeta, opts: StoreOptions): Promise<StoreMeta> {
  const files = await backend.files(
    key,
    meta.parts.map((p) => p.name),
  );
  const wrong = meta.parts.findIndex((p, i) => !partComplete(p) || files.parts[i]!.size !== p.size);
  if (wrong >= 0) {
    const p = meta.parts[wrong]!;
    throw new ModelLoadError(
      `${p.name}: the server sent ${files.parts[wrong]!.size} bytes where ${p.size} were announced; ` +
        'the file was deleted. Check the URL, or try again later.',
      'size_mismatch',
      { url: p.url, expected: p.size, got: files.parts[wrong]!.size },
    );
  }
  await (opts.format ?? GGUF_FORMAT).check(files, opts);
  const total = meta.parts.reduce((n, p) => n + p.size!, 0);
  let loaded = 0;
  const report = (n: number) => opts.onProgress?.({ phase: 'verify', loaded: (loaded += n), total });
  opts.onProgress?.({ phase: 'verify', loaded, total });
  for (const [i, p] of meta.parts.entries()) {
    p.hash = await sha256Hex(files.parts[i]!, report, opts.signal);
    if (p.sha256 && p.hash !== p.sha256.toLowerCase()) {
      throw new ModelLoadError(
        `${p.name} does not match the sha256 its source gives (${p.sha256}, got ${p.hash}): the download ` +
          'is damaged or the file changed on the server. It was deleted; load again to download it anew.',
        'checksum_mismatch',
        { url: p.url, expected: p.sha256, got: p.hash },
      );
    }
  }
  return { ...meta, complete: true, verified: meta.parts.every((p) => p.sha256 !== null) };
}

async function checkSpace(backend: StoreBackend, meta: StoreMeta) {
  const needed = meta.parts.reduce((n, p) => n + (p.size ?? 0) - downloaded(p), 0);
  const { used, quota } = await backend.space();
  if (used === null || quota === null) return;
  const free = Math.max(0, quota - used);
  if (needed > free) throw quotaError(meta, needed, free);
}

async function downloadError(err: unknown, meta: StoreMeta): Promise<unknown> {
  if (err instanceof DOMException && err.name === 'QuotaExceededError') {
    // The browser refused to store more: whatever the estimate says, nothing is free for this site now.
    return quotaError(
      meta,
      meta.parts.reduce((n, p) => n + (p.size ?? 0) - downloaded(p), 0),
      0,
    );
  }
  if (err instanceof ModelLoadError && err.code === 'http_error' && err.details.status === 416) {
    const url = err.details.url as string;
    return new ModelLoadError(
      `${fileName(url)} on the server is shorter than the ${meta.parts.find((p) => p.url === url)?.size} ` +
        'bytes announced for it: the file there is incomplete. Try again later or pick another file.',
      'size_mismatch',
      { url },
    );
  }
  return err;
}

/** A writer that stops the download as soon as the file's first bytes show it is not of its kind. */
function startChecked(writer: FileWriter, part: PartState, format: StoredFormat): FileWriter {
  const head = new Uint8Array(8);
  let have = 0;
  return {
    async write(at, bytes) {
      if (at <= have && have < head.length) {
        const n = Math.min(head.length - at, bytes.length);
        head.set(bytes.subarray(0, n), at);
        have = Math.max(have, at + n);
        const why =
          have === head.length || (part.size !== null && have >= part.size)
            ? format.start(head.subarray(0, have))
            : null;
        if (why) {
          throw new ModelLoadError(`${part.url} is not ${format.what}: ${why}. Nothing of it was kept.`, 'not_gguf', {
            url: part.url,
          });
        }
      }
      return writer.write(at, bytes);
    },
    truncate: (size) => writer.truncate(size),
    flush: () => writer.flush(),
    close: () => writer.close(),
  };
}

/** The server still has the files a partial download started on (same sizes, checksums and ETags where known). */
function sameFiles(parts: PartState[], files: WebFile[]): boolean {
  return (
    parts.length === files.length &&
    parts.every((p, i) => {
      const f = files[i]!;
      return p.url === f.url && p.size === f.size && p.sha256 === f.sha256 && (!p.etag || !f.etag || p.etag === f.etag);
    })
  );
}

function quotaError(meta: StoreMeta, needed: number, free: number): ModelLoadError {
  return new ModelLoadError(
    `${meta.parts[0]!.name} needs ${formatBytes(needed)} more storage, but this site has ` +
      `${formatBytes(free)} free. Delete stored models (engine.models.list(), engine.models.delete(id)) ` +
      'or free disk space, then load again: the download resumes where it stopped.',
    'quota_exceeded',
    { needed, free },
  );
}

/** 'download' progress with the speed over the last seconds, at most every PROGRESS_EVERY_MS. */
class DownloadProgress {
  private loaded: number;
  private readonly total: number;
  private last = 0;
  private readonly samples: Array<[number, number]> = [];

  constructor(
    meta: StoreMeta,
    private readonly onProgress?: (p: Progress) => void,
  ) {
    this.loaded = meta.parts.reduce((n, p) => n + downloaded(p), 0);
    this.total = meta.parts.reduce((n, p) => n + (p.size ?? 0), 0);
    this.emit(performance.now());
  }

  add(n: number) {
    this.loaded += n;
    const now = performance.now();
    if (now - this.last >= PROGRESS_EVERY_MS) this.emit(now);
  }

  end() {
    this.emit(performance.now());
  }

  private emit(now: number) {
    this.last = now;
    this.samples.push([now, this.loaded]);
    while (this.samples.length > 2 && now - this.samples[0]![0] > SPEED_WINDOW_MS) this.samples.shift();
    const [t0, b0] = this.samples[0]!;
    const bytesPerSecond = now > t0 ? Math.round(((this.loaded - b0) * 1000) / (now - t0)) : 0;
    this.onProgress?.({
      phase: 'download',
      loaded: this.loaded,
      total: Math.max(this.total, this.loaded),
      bytesPerSecond,
    });
  }
}
