// The model store as the API shows it: stored models, their ids, the storage they take.
import type { HfFile } from './options.ts';

/** A model in the model store (OPFS in a browser, a folder in Node). */
export interface StoredModel {
  /** The URL of its (first) file: what models.delete() takes. A { hf } source is stored under its resolve URL. */
  id: string;
  /** The (first) file's name. */
  name: string;
  files: Array<{ name: string; size: number; sha256: string | null }>;
  /** Bytes of all its files; null while a download of unknown length is under way. */
  size: number | null;
  /** Bytes downloaded so far (size when complete). */
  downloaded: number;
  /** Downloaded in full and checked (size, and sha256 where the source gave one): it loads without the network. */
  complete: boolean;
  /** Its sha256 was checked against the one the source gave. */
  verified: boolean;
  /** When it was last loaded (or downloaded), ms since the epoch. */
  lastUsed: number;
}

export interface ModelStoreUsage {
  /** Bytes the stored models take. */
  models: number;
  /** Bytes this origin (or the disk, in Node) uses and may use in all; null when the platform does not say. */
  used: number | null;
  quota: number | null;
  /** Whether the browser keeps this origin's storage under pressure (navigator.storage.persist(), requested on the
   * first load of a URL or { hf } model); null when the platform does not say. */
  persisted: boolean | null;
}

/** A stored model: its id (StoredModel.id, the URL) or the { hf } source it was loaded from. */
export type StoredModelRef = string | { hf: HfFile };

/** Where the model store keeps files: OPFS, IndexedDB (browsers without OPFS sync access), a folder (Node). */
export type ModelStorage = 'opfs' | 'indexeddb' | 'folder';

export interface ModelStoreApi {
  list(): Promise<StoredModel[]>;
  /** Deletes a stored model (complete or not); false when there was none. */
  delete(model: StoredModelRef): Promise<boolean>;
  usage(): Promise<ModelStoreUsage>;
}
