// The model store: URL and { hf } models downloaded once and kept (OPFS in a browser, a folder in Node), each in a
// folder of its own with a metadata record that holds the download's state. A complete model loads with no network
// request at all; an incomplete one resumes where it stopped. Nothing is complete until checked.
// Here: the store's calls (open, ensure, list, delete, usage) and its folders; a download and its checks are
// store-download.ts, the record and what a platform provides store-backend.ts.
import type { ModelStorage, ModelStoreApi, ModelStoreUsage, StoredModel } from '../../types.ts';
import type { ModelFile } from './file.ts';
import { downloaded } from './download.ts';
import { fileName, webUrls, type WebSource } from './web-source.ts';
import { modelIdentity, sha256InMemory } from './sha256.ts';
import { type StoreBackend, type StoreMeta, validMeta } from './store-backend.ts';
import { fetchModel, type StoreOptions } from './store-download.ts';

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
        meta = await fetchModel(this.backend, source, key, meta, opts);
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

  private async writeMeta(key: string, meta: StoreMeta) {
    const recorder = await this.backend.recorder(key);
    try {
      await recorder.write(meta);
    } finally {
      await recorder.close();
    }
  }
}

/** Folder name of a model: the sha256 of its id (a URL, which folder names cannot hold); its record says the id. */
const storeKey = async (id: string) => `s-${await sha256InMemory(id)}`;
const STORE_KEY = /^s-[0-9a-f]{64}$/;

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
