// Turns a model source (URL, Hugging Face file, Blob/File, Node path) into a ModelFile the engine can check and
// mount. URL and { hf } sources go through the model store (store.ts) when the engine has one; without it
// (LoadOptions.store false) they are downloaded into memory, with progress in bytes, until the signal aborts.
import { AbortError, ModelLoadError } from '../../errors.ts';
import type { ModelSource } from '../../types.ts';
import { blobFile, type ModelFile } from './file.ts';
import { type FetchOptions, fetchOk, isWebSource, splitNames, type WebSource, webModel } from './web-source.ts';
import type { ModelStore } from './store.ts';
import type { StoredFormat } from './store-download.ts';

export interface SourceOptions extends FetchOptions {
  /** What kind of file the model store expects (default a GGUF model). */
  format?: StoredFormat;
  /** Opens { path } sources; only Node provides it. */
  openPath?: (path: string) => Promise<ModelFile>;
  /** Where URL and { hf } models are kept; null: downloaded into memory each time. */
  store?: ModelStore | null;
}

export async function openSource(source: ModelSource, opts: SourceOptions): Promise<ModelFile> {
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    const name = typeof File !== 'undefined' && source instanceof File ? source.name : 'model.gguf';
    return blobFile([{ name, blob: source }]);
  }
  if (Array.isArray(source)) return blobFile(splitFiles(source));
  if (source && typeof source === 'object' && 'path' in source && typeof source.path === 'string') {
    if (!opts.openPath) {
      throw new ModelLoadError(
        '{ path } sources work only in Node; in a browser pass a URL, File or Blob.',
        'unsupported_source',
      );
    }
    return opts.openPath(source.path);
  }
  if (isWebSource(source)) {
    if (opts.store) return opts.store.open(source, opts);
    return downloadToMemory(source, opts);
  }
  throw new ModelLoadError(
    'model source must be a URL string, a Blob/File, the Files of a split model, { hf: { repo, file } } or (Node) ' +
      '{ path }',
    'invalid_source',
  );
}

/**
 * A split model given as local files: every part (name-0000i-of-0000N.gguf), in any order, put in order. Refused,
 * saying which, when one is missing or one is not a part of it.
 */
export function splitFiles(files: unknown[]): Array<{ name: string; blob: Blob }> {
  const named = files.map((f) => {
    if (typeof File === 'undefined' || !(f instanceof File)) {
      throw new ModelLoadError(
        'a model given as several files takes File objects (from a file input)',
        'invalid_source',
      );
    }
    return f;
  });
  if (named.length === 1) return [{ name: named[0]!.name, blob: named[0]! }];
  // Any part names them all.
  const names = named.map((f) => splitNames(f.name)).find((n) => n.length > 1) ?? [];
  const byName = new Map(named.map((f) => [f.name, f]));
  const missing = names.filter((n) => !byName.has(n));
  const extra = named.filter((f) => !names.includes(f.name)).map((f) => f.name);
  if (!names.length || missing.length || extra.length || named.length !== names.length) {
    throw new ModelLoadError(
      `several files are one model only as the parts of a split model (name-00001-of-0000N.gguf … -0000N-of-0000N.gguf)` +
        (missing.length ? `; missing: ${missing.join(', ')}` : '') +
        (extra.length ? `; not parts of it: ${extra.join(', ')}` : '') +
        '. Pick every part of the model.',
      'invalid_source',
      { missing, extra },
    );
  }
  return names.map((name) => ({ name, blob: byName.get(name)! }));
}

/** Downloads every part into a Blob (LoadOptions.store false). */
async function downloadToMemory(source: WebSource, opts: SourceOptions): Promise<ModelFile> {
  const web = await webModel(source, opts);
  await opts.checkBefore?.(web.files);
  const total = web.files.reduce((n, f) => n + (f.size ?? 0), 0);
  let loaded = 0;
  const parts = [];
  opts.onProgress?.({ phase: 'download', loaded, total });
  for (const file of web.files) {
    const res = await fetchOk(file.url, opts);
    const chunks: Uint8Array[] = [];
    try {
      const reader = res.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        loaded += value.length;
        opts.onProgress?.({ phase: 'download', loaded, total: Math.max(total, loaded) });
      }
    } catch (err) {
      if (opts.signal?.aborted) throw new AbortError('model download aborted');
      throw new ModelLoadError(
        `the download of ${file.url} broke off after ${loaded} bytes: ${(err as Error).message}`,
        'network_error',
        { url: file.url },
      );
    }
    // A Blob, not one big ArrayBuffer: the browser may keep large blobs on disk, and WORKERFS reads them in slices.
    parts.push({ name: file.name, blob: new Blob(chunks as BlobPart[]) });
  }
  return blobFile(parts);
}
