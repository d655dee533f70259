// The model store: URL and { hf } models downloaded once and kept (OPFS in a browser, a folder in Node), each in a
// folder of its own with a metadata record that holds the download's state. A complete model loads with no network
// request at all; an incomplete one resumes where it stopped; a file whose size or sha256 is wrong is never loaded.
import { ModelLoadError } from '../../errors.ts';
import type { ModelStoreApi, ModelStoreUsage, Progress, StoredModel } from '../../types.ts';
import { hashText } from '../cache/hash.ts';
import type { ModelFile, SourceOptions } from '../source.ts';
import { downloaded, downloadParts, type FileWriter, newPartState, partComplete, type PartState } from './download.ts';
import { type RemoteFile, remoteModel, remoteUrls, type RemoteSource, fileName } from './remote.ts';
import { sha256Hex } from './sha256.ts';

/** What the store keeps about one model. */
export interface StoreMeta {
  version: 1;
  id: string;
  parts: PartState[];
  complete: boolean;
  verified: boolean;
  createdAt: number;
  lastUsed: number;
}

/** The files and records of the store, on one platform (models/opfs.ts, models/node-dir.ts). */
export interface StoreBackend {
  /** The folders of the stored models. */
  keys(): Promise<string[]>;
  readMeta(key: string): Promise<StoreMeta | null>;
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

export class ModelStore implements ModelStoreApi {
  constructor(private readonly backend: StoreBackend) {}

  /** The model's files from the store, downloading what is missing first. */
  async open(source: RemoteSource, opts: SourceOptions): Promise<ModelFile> {
    const { folder, files } = await this.ensure(source, opts);
    return this.backend.files(folder, files);
  }

  /** Downloads what is missing of the model; returns the folder and names of its complete files. */
  async ensure(source: RemoteSource, opts: SourceOptions): Promise<{ id: string; folder: string; files: string[] }> {
    const { id, urls } = remoteUrls(source, opts.hfEndpoint);
    const key = storeKey(id);
    return this.backend.lock(key, async () => {
      let meta = await this.backend.readMeta(key);
      if (!meta?.complete) meta = await this.fetch(source, key, meta, opts);
      meta.lastUsed = Date.now();
      await this.writeMeta(key, meta);
      return { id, folder: key, files: urls.map(fileName) };
    });
  }

  async list(): Promise<StoredModel[]> {
    const metas = await Promise.all((await this.backend.keys()).map((k) => this.backend.readMeta(k)));
    return metas.filter((m): m is StoreMeta => m !== null).map(describe).sort((a, b) => b.lastUsed - a.lastUsed);
  }

  async delete(id: string): Promise<boolean> {
    const key = storeKey(id);
    return this.backend.lock(key, async () => {
      if (!(await this.backend.readMeta(key))) return false;
      await this.backend.remove(key);
      return true;
    });
  }

  async usage(): Promise<ModelStoreUsage> {
    const [models, space, persisted] = await Promise.all([this.list(), this.backend.space(), this.backend.persisted()]);
    return { models: models.reduce((n, m) => n + m.downloaded, 0), used: space.used, quota: space.quota, persisted };
  }

  /** Downloads (or resumes) the model and checks it; returns its complete record. */
  private async fetch(source: RemoteSource, key: string, stored: StoreMeta | null, opts: SourceOptions): Promise<StoreMeta> {
    const remote = await remoteModel(source, opts);
    let meta = stored;
    if (!meta || !sameFiles(meta.parts, remote.files)) {
      if (meta) await this.backend.remove(key); // the server's files changed since: start over
      const now = Date.now();
      meta = { version: 1, id: remote.id, parts: remote.files.map(newPartState), complete: false, verified: false, createdAt: now, lastUsed: now };
    }
    await this.checkSpace(meta);
    // Every file the download writes is opened before it starts and stays open until it ends: in Chromium, opening
    // an OPFS file while a download writes others was seen to wait for ever (incognito profiles, as in Playwright).
    const recorder = await this.backend.recorder(key);
    const writers: FileWriter[] = [];
    try {
      await recorder.write(meta); // before any data: a folder always has its record
      writers.push(...await Promise.all(meta.parts.map((p) => this.backend.writer(key, p.name))));
      await this.download(meta, recorder, writers, opts);
    } catch (err) {
      await Promise.all([recorder, ...writers].map((w) => w.close().catch(() => {})));
      // A file shorter than announced will not get longer: what came of it is dead weight.
      if (err instanceof ModelLoadError && err.code === 'size_mismatch') await this.backend.remove(key);
      throw err;
    }
    await Promise.all([recorder, ...writers].map((w) => w.close()));
    return this.check(key, meta, opts);
  }

  private async writeMeta(key: string, meta: StoreMeta) {
    const recorder = await this.backend.recorder(key);
    try {
      await recorder.write(meta);
    } finally {
      await recorder.close();
    }
  }

  private async download(meta: StoreMeta, recorder: Recorder, writers: FileWriter[], opts: SourceOptions) {
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
      await downloadParts(meta.parts.map((state, i) => ({ state, writer: writers[i]! })), {
        signal: opts.signal, fetch: opts.fetch, onBytes: (n) => progress.add(n),
      });
    } catch (err) {
      throw await this.downloadError(err, meta);
    } finally {
      clearInterval(timer);
      progress.end();
      await save().catch(() => {});
    }
  }

  /** Sizes always, sha256 where the source gave one; a mismatch deletes the files. */
  private async check(key: string, meta: StoreMeta, opts: SourceOptions): Promise<StoreMeta> {
    const files = await this.backend.files(key, meta.parts.map((p) => p.name));
    const wrong = meta.parts.findIndex((p, i) => !partComplete(p) || files.parts[i]!.size !== p.size);
    if (wrong >= 0) {
      const p = meta.parts[wrong]!;
      await this.backend.remove(key);
      throw new ModelLoadError(`${p.name}: the server sent ${files.parts[wrong]!.size} bytes where ${p.size} were announced; ` +
        'the file was deleted. Check the URL, or try again later.', 'size_mismatch', { url: p.url, expected: p.size, got: files.parts[wrong]!.size });
    }
    const hashed = meta.parts.filter((p) => p.sha256);
    if (hashed.length) {
      const total = hashed.reduce((n, p) => n + p.size!, 0);
      let loaded = 0;
      const report = (n: number) => opts.onProgress?.({ phase: 'verify', loaded: (loaded += n), total });
      opts.onProgress?.({ phase: 'verify', loaded, total });
      for (const [i, p] of meta.parts.entries()) {
        if (!p.sha256) continue;
        const got = await sha256Hex(files.parts[i]!, report, opts.signal);
        if (got !== p.sha256.toLowerCase()) {
          await this.backend.remove(key);
          throw new ModelLoadError(`${p.name} does not match the sha256 its source gives (${p.sha256}, got ${got}): the download ` +
            'is damaged or the file changed on the server. It was deleted; load again to download it anew.',
          'checksum_mismatch', { url: p.url, expected: p.sha256, got });
        }
      }
    }
    return { ...meta, complete: true, verified: hashed.length === meta.parts.length };
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
      return quotaError(meta, meta.parts.reduce((n, p) => n + (p.size ?? 0) - downloaded(p), 0), 0);
    }
    if (err instanceof ModelLoadError && err.code === 'http_error' && err.details.status === 416) {
      const url = err.details.url as string;
      return new ModelLoadError(`${fileName(url)} on the server is shorter than the ${meta.parts.find((p) => p.url === url)?.size} ` +
        'bytes announced for it: the file there is incomplete. Try again later or pick another file.', 'size_mismatch', { url });
    }
    return err;
  }
}

/** Folder name of a model: ids are URLs, which folder names cannot hold. */
export const storeKey = (id: string) => `m-${hashText(id)}`;

/** The server still has the files a partial download started on (same sizes, checksums and ETags where known). */
function sameFiles(parts: PartState[], files: RemoteFile[]): boolean {
  return parts.length === files.length && parts.every((p, i) => {
    const f = files[i]!;
    return p.url === f.url && p.size === f.size && p.sha256 === f.sha256 && (!p.etag || !f.etag || p.etag === f.etag);
  });
}

function describe(meta: StoreMeta): StoredModel {
  const sizes = meta.parts.map((p) => p.size);
  return {
    id: meta.id, name: meta.parts[0]!.name,
    files: meta.parts.map((p) => ({ name: p.name, size: p.size ?? downloaded(p), sha256: p.sha256 })),
    size: sizes.includes(null) ? null : sizes.reduce((a, b) => a! + b!, 0),
    downloaded: meta.parts.reduce((n, p) => n + downloaded(p), 0),
    complete: meta.complete, verified: meta.verified, lastUsed: meta.lastUsed,
  };
}

function quotaError(meta: StoreMeta, needed: number, free: number): ModelLoadError {
  return new ModelLoadError(`${meta.parts[0]!.name} needs ${mb(needed)} more storage, but this site has ` +
    `${mb(free)} free. Delete stored models (engine.models.list(), engine.models.delete(id)) ` +
    'or free disk space, then load again: the download resumes where it stopped.', 'quota_exceeded', { needed, free });
}

const mb = (n: number) => `${(n / 1024 ** 2).toFixed(1)} MiB`;

/** 'download' progress with the speed over the last seconds, at most every PROGRESS_EVERY_MS. */
class DownloadProgress {
  private loaded: number;
  private readonly total: number;
  private last = 0;
  private readonly samples: Array<[number, number]> = [];

  constructor(meta: StoreMeta, private readonly onProgress?: (p: Progress) => void) {
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
    this.onProgress?.({ phase: 'download', loaded: this.loaded, total: Math.max(this.total, this.loaded), bytesPerSecond });
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

