// The model store: URL and { hf } models downloaded once and kept (OPFS in a browser, a folder in Node), each in a
// folder of its own with a metadata record that holds the download's state. A complete model loads with no network
// request at all; an incomplete one resumes where it stopped. Nothing is complete until checked: its announced size
// against the engine's limit before any byte comes, its first bytes as they arrive (a web page instead of a model is
// stopped at once), then its size, GGUF header and sha256; a file that fails a check is deleted.
import { ModelLoadError, type ModelLoadErrorCode } from '../../errors.ts';
import type { ModelStorage, ModelStoreApi, ModelStoreUsage, Progress, StoredModel } from '../../types.ts';
import { checkModelFile, tooLarge } from './check.ts';
import { notGgufStart } from '../gguf/reader.ts';
import type { ModelFile } from './file.ts';
import { downloaded, downloadParts, type FileWriter, newPartState, partComplete, type PartState } from './download.ts';
import { type FetchOptions, fileName, type WebFile, webModel, webUrls, type WebSource } from './web-source.ts';
import { modelIdentity, sha256Hex, sha256InMemory } from './sha256.ts';
import { formatBytes } from '../bytes.ts';

/** Bump when the record changes: records of another version are not this code's, and their folders are deleted. */
export const STORE_VERSION = 2;

/** What the store keeps about one model. */
export interface StoreMeta {
  version: typeof STORE_VERSION;
  id: string;
  parts: PartState[];
  complete: boolean;
  verified: boolean;
  createdAt: number;
  lastUsed: number;
}

/** The files and records of the store, on one platform (models/opfs.ts, models/idb.ts, models/node-dir.ts). */
export interface StoreBackend {
  /** What keeps the files: engine.info().storage. */
  kind: ModelStorage;
  /** The folders of the stored models. */
  keys(): Promise<string[]>;
  /** The folder's record as stored (validMeta checks it), or null. */
  readMeta(key: string): Promise<unknown>;
  /** Opens the model's record for writing (creating its folder); a download keeps it open while it runs. */
  recorder(key: string): Promise<Recorder>;
  writer(key: string, name: string): Promise<FileWriter>;
  /** The stored files of a model, ready for llama.cpp. */
  files(key: string, names: string[]): Promise<ModelFile>;
  remove(key: string): Promise<void>;
  /** Bytes used and the most that may be used (origin quota, or the disk); null when unknown. */
  space(): Promise<{ used: number | null; quota: number | null }>;
  persisted(): Promise<boolean | null>;
  /** Runs `fn` holding the model's lock: one download of a model at a time, across tabs where the platform allows. */
  lock<T>(key: string, fn: () => Promise<T>): Promise<T>;
}

/** Writes a model's record. */
export interface Recorder {
  /** Replaces the record in one step: a crash leaves the old record or the new one, never half of one. */
  write(meta: StoreMeta): Promise<void>;
  close(): Promise<void>;
}

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

export class ModelStore implements ModelStoreApi {
  private swept: Promise<void> | null = null;

  constructor(private readonly backend: StoreBackend) {}

  get kind(): ModelStorage {
    return this.backend.kind;
  }

  /** The model's files from the store, downloading what is missing first. */
  async open(source: WebSource, opts: StoreOptions): Promise<ModelFile> {
    const { folder, files, identity } = await this.ensure(source, opts);
    return { ...(await this.backend.files(folder, files)), identity };
  }

  /** Downloads what is missing of the model; returns its folder, the names of its checked files and its identity. */
  async ensure(
    source: WebSource,
    opts: StoreOptions,
  ): Promise<{ id: string; folder: string; files: string[]; identity: string }> {
    const { id, urls } = webUrls(source, opts.hfEndpoint);
    const key = await storeKey(id);
    await this.sweep();
    return this.backend.lock(key, async () => {
      let meta = await this.readMeta(key, id);
      if (meta?.complete) {
        meta.lastUsed = Date.now();
        await this.writeMeta(key, meta);
      } else {
        meta = await this.fetch(source, key, meta, opts);
      }
      return { id, folder: key, files: urls.map(fileName), identity: modelIdentity(meta.parts.map((p) => p.hash!)) };
    });
  }

  async list(): Promise<StoredModel[]> {
    await this.sweep();
    const metas = await Promise.all(
      (await this.backend.keys()).map(async (k) => validMeta(await this.backend.readMeta(k).catch(() => null))),
    );
    return metas
      .filter((m): m is StoreMeta => m !== null)
      .map(describe)
      .sort((a, b) => b.lastUsed - a.lastUsed);
  }

  /** Deletes a stored model, named by its id (models.list()) or its source. */
  async delete(source: WebSource, hfEndpoint?: string): Promise<boolean> {
    const key = await storeKey(typeof source === 'string' ? source : webUrls(source, hfEndpoint).id);
    return this.backend.lock(key, async () => {
      if (!(await this.backend.readMeta(key).catch(() => null))) return false;
      await this.backend.remove(key);
      return true;
    });
  }

  async usage(): Promise<ModelStoreUsage> {
    const [models, space, persisted] = await Promise.all([this.list(), this.backend.space(), this.backend.persisted()]);
    return { models: models.reduce((n, m) => n + m.downloaded, 0), used: space.used, quota: space.quota, persisted };
  }

  /** The folder's record if it is valid and this model's; anything else there is deleted (a damaged or foreign record).
   */
  private async readMeta(key: string, id: string): Promise<StoreMeta | null> {
    const raw = await this.backend.readMeta(key).catch(() => null);
    const meta = validMeta(raw);
    if (raw !== null && (!meta || meta.id !== id)) {
      console.warn(`[hearth] the model store's record for ${id} is not valid; the model is downloaded again`);
      await this.backend.remove(key);
      return null;
    }
    return meta;
  }

  /** Once per store: deletes the folders of an earlier store, named otherwise (their records are not this code's; a
   * record of this naming that is not valid is deleted when its model is next asked for). */
  private sweep(): Promise<void> {
    this.swept ??= (async () => {
      for (const key of await this.backend.keys()) {
        if (!STORE_KEY.test(key)) await this.backend.lock(key, () => this.backend.remove(key)).catch(() => {});
      }
    })();
    return this.swept;
  }

  /** Downloads (or resumes) the model and checks it; returns its complete record. */
  private async fetch(
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
      if (meta) await this.backend.remove(key); // the server's files changed since: start over
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
    await this.checkSpace(meta);
    // Every file the download writes is opened before it starts, and the record stays open until the checked record is
    // written: in Chromium, opening an OPFS file while others are written or read was seen to wait for ever (incognito
    // profiles, as in Playwright; a first visit stuck after "Checking the download").
    const recorder = await this.backend.recorder(key);
    const writers: FileWriter[] = [];
    try {
      await recorder.write(meta); // before any data: a folder always has its record
      writers.push(
        ...(await Promise.all(
          meta.parts.map(async (p) =>
            startChecked(await this.backend.writer(key, p.name), p, opts.format ?? GGUF_FORMAT),
          ),
        )),
      );
      await this.download(meta, recorder, writers, opts);
      await Promise.all(writers.splice(0).map((w) => w.close())); // read back by the check
      const checked = { ...(await this.check(key, meta, opts)), lastUsed: Date.now() };
      await recorder.write(checked);
      await recorder.close();
      return checked;
    } catch (err) {
      await Promise.all([recorder, ...writers].map((w) => w.close().catch(() => {})));
      if (err instanceof ModelLoadError && BAD_FILE.has(err.code)) await this.backend.remove(key);
      throw err;
    }
  }

  private async writeMeta(key: string, meta: StoreMeta) {
    const recorder = await this.backend.recorder(key);
    try {
      await recorder.write(meta);
    } finally {
      await recorder.close();
    }
  }

  private async download(meta: StoreMeta, recorder: Recorder, writers: FileWriter[], opts: FetchOptions) {
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
      throw await this.downloadError(err, meta);
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
  private async check(key: string, meta: StoreMeta, opts: StoreOptions): Promise<StoreMeta> {
    const files = await this.backend.files(
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

  private async checkSpace(meta: StoreMeta) {
    const needed = meta.parts.reduce((n, p) => n + (p.size ?? 0) - downloaded(p), 0);
    const { used, quota } = await this.backend.space();
    if (used === null || quota === null) return;
    const free = Math.max(0, quota - used);
    if (needed > free) throw quotaError(meta, needed, free);
  }

  private async downloadError(err: unknown, meta: StoreMeta): Promise<unknown> {
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
}

/** Folder name of a model: the sha256 of its id (a URL, which folder names cannot hold); its record says the id. */
const storeKey = async (id: string) => `s-${await sha256InMemory(id)}`;
const STORE_KEY = /^s-[0-9a-f]{64}$/;

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

/** A stored record, checked in every part (it may be damaged, or written by other code); null when not valid. */
export function validMeta(value: unknown): StoreMeta | null {
  const m = value as StoreMeta | null;
  if (!m || typeof m !== 'object' || m.version !== STORE_VERSION || typeof m.id !== 'string') return null;
  if (
    typeof m.complete !== 'boolean' ||
    typeof m.verified !== 'boolean' ||
    !isTime(m.createdAt) ||
    !isTime(m.lastUsed)
  ) {
    return null;
  }
  if (!Array.isArray(m.parts) || !m.parts.length || !m.parts.every(validPart)) return null;
  // A complete model has every byte and its identity.
  if (m.complete && !m.parts.every((p) => partComplete(p) && p.hash)) return null;
  return m;
}

function validPart(p: PartState): boolean {
  if (!p || typeof p !== 'object') return false;
  const size = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  const hex = (h: unknown) => h === null || (typeof h === 'string' && /^[0-9a-f]{64}$/i.test(h));
  // The name is a file in the model's folder: never a path.
  if (typeof p.name !== 'string' || !/^[^/\\]+$/.test(p.name) || p.name === '.' || p.name === '..') return false;
  if (typeof p.url !== 'string' || !(p.size === null || size(p.size)) || !hex(p.sha256) || !hex(p.hash)) return false;
  if (!(p.etag === null || typeof p.etag === 'string') || !(p.ranges === null || typeof p.ranges === 'boolean')) {
    return false;
  }
  if (!size(p.chunkSize) || !Array.isArray(p.done) || !p.done.length || !p.done.every(size)) return false;
  return p.size === null || downloaded(p) <= p.size;
}

const isTime = (t: unknown) => typeof t === 'number' && Number.isFinite(t);

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

function describe(meta: StoreMeta): StoredModel {
  const sizes = meta.parts.map((p) => p.size);
  return {
    id: meta.id,
    name: meta.parts[0]!.name,
    files: meta.parts.map((p) => ({ name: p.name, size: p.size ?? downloaded(p), sha256: p.sha256 })),
    size: sizes.includes(null) ? null : sizes.reduce((a, b) => a! + b!, 0),
    downloaded: meta.parts.reduce((n, p) => n + downloaded(p), 0),
    complete: meta.complete,
    verified: meta.verified,
    lastUsed: meta.lastUsed,
  };
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

/** A lock within this process, for platforms without Web Locks (Node). */
export function localLocks(): StoreBackend['lock'] {
  const tails = new Map<string, Promise<unknown>>();
  return (key, fn) => {
    const run = (tails.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = run.catch(() => {});
    tails.set(key, tail);
    void tail.then(() => tails.get(key) === tail && tails.delete(key));
    return run;
  };
}
