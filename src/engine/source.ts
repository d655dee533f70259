// Turns a model source (URL, Hugging Face file, Blob/File, Node path) into a ModelFile the engine can check and
// mount. Downloads report progress in bytes and stop when the signal aborts.
import { AbortError, ModelLoadError } from '../errors.ts';
import type { ModelSource, Progress } from '../types.ts';
import type { HearthModule } from './llama/module.ts';

export interface ModelFile {
  name: string;
  size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Makes the file visible to llama.cpp; returns its path there and how to undo it. */
  mount(mod: HearthModule): { path: string; unmount(): void };
}

export interface SourceOptions {
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  fetch?: typeof fetch;
  /** Opens { path } sources; only Node provides it. */
  openPath?: (path: string) => Promise<ModelFile>;
}

let mountCounter = 0;

/** A Blob or File mounted with WORKERFS: llama.cpp reads slices of it on demand, never the whole file at once. */
export function blobFile(blob: Blob, name: string): ModelFile {
  return {
    name,
    size: blob.size,
    read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()),
    mount(mod) {
      // WORKERFS reads with FileReaderSync, which only workers have.
      if (!('FileReaderSync' in globalThis)) {
        throw new ModelLoadError('Blob and URL models can only be loaded in a browser worker; in Node pass { path }.', 'unsupported_source');
      }
      const dir = `/hearth-model-${++mountCounter}`;
      mod.FS.mkdir(dir);
      mod.FS.mount(mod.WORKERFS, { blobs: [{ name: 'model.gguf', data: blob }] }, dir);
      return { path: `${dir}/model.gguf`, unmount: () => unmountDir(mod, dir) };
    },
  };
}

export function unmountDir(mod: HearthModule, dir: string) {
  try {
    mod.FS.unmount(dir);
    mod.FS.rmdir(dir);
  } catch {
    // Already gone (a crashed module is replaced wholesale); nothing to release.
  }
}

export function hfUrl(hf: { repo: string; file: string; revision?: string }): string {
  const repoOk = typeof hf.repo === 'string' && /^[\w.-]+\/[\w.-]+$/.test(hf.repo);
  const fileOk = typeof hf.file === 'string' && hf.file.length > 0 && !hf.file.startsWith('/') && !hf.file.includes('..');
  if (!repoOk || !fileOk) {
    throw new ModelLoadError(
      `Hugging Face source must look like { hf: { repo: "owner/name", file: "model.gguf" } }, got ${JSON.stringify(hf)}`,
      'invalid_source');
  }
  const path = hf.file.split('/').map(encodeURIComponent).join('/');
  return `https://huggingface.co/${hf.repo}/resolve/${encodeURIComponent(hf.revision ?? 'main')}/${path}`;
}

export async function openSource(source: ModelSource, opts: SourceOptions): Promise<ModelFile> {
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    const name = typeof File !== 'undefined' && source instanceof File ? source.name : 'model.gguf';
    return blobFile(source, name);
  }
  if (typeof source === 'string') return download(source, opts);
  if (source && typeof source === 'object' && 'hf' in source) return download(hfUrl(source.hf), opts);
  if (source && typeof source === 'object' && 'path' in source && typeof source.path === 'string') {
    if (!opts.openPath) throw new ModelLoadError('{ path } sources work only in Node; in a browser pass a URL, File or Blob.', 'unsupported_source');
    return opts.openPath(source.path);
  }
  throw new ModelLoadError('model source must be a URL string, a Blob/File, { hf: { repo, file } } or (Node) { path }', 'invalid_source');
}

async function download(url: string, opts: SourceOptions): Promise<ModelFile> {
  const fetchImpl = opts.fetch ?? fetch;
  const name = decodeURIComponent(url.split('?')[0]!.split('/').pop() || 'model.gguf');
  let res: Response;
  try {
    res = await fetchImpl(url, { signal: opts.signal });
  } catch (err) {
    if (opts.signal?.aborted) throw new AbortError('model download aborted');
    throw new ModelLoadError(`could not fetch ${url}: ${(err as Error).message}. Check the URL and your connection.`, 'network_error', { url });
  }
  if (!res.ok) {
    throw new ModelLoadError(`fetching ${url} failed with HTTP ${res.status} ${res.statusText}`.trim() +
      (res.status === 404 ? ': no file there; check the URL (for Hugging Face: repo, file name and revision).' : '.'),
    'http_error', { url, status: res.status });
  }
  const total = Number(res.headers.get('content-length')) || 0;
  const parts: Uint8Array[] = [];
  let loaded = 0;
  opts.onProgress?.({ phase: 'download', loaded, total });
  try {
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      loaded += value.length;
      opts.onProgress?.({ phase: 'download', loaded, total: Math.max(total, loaded) });
    }
  } catch (err) {
    if (opts.signal?.aborted) throw new AbortError('model download aborted');
    throw new ModelLoadError(`the download of ${url} broke off after ${loaded} bytes: ${(err as Error).message}`, 'network_error', { url });
  }
  // A Blob, not one big ArrayBuffer: the browser may keep large blobs on disk, and WORKERFS reads them in slices.
  return blobFile(new Blob(parts as BlobPart[]), name);
}
