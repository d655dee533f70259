// The model store's side on a platform (models/opfs.ts, models/idb.ts, models/node-dir.ts): what a platform provides
// the store (store.ts), the record it keeps for each model with the download's state, that record's checks (it may be
// damaged, or written by other code), and a lock for platforms without Web Locks.
import type { ModelStorage } from '../../types.ts';
import { downloaded, type FileWriter, partComplete, type PartState } from './download.ts';
import type { ModelFile } from './file.ts';

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
