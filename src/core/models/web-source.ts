// Where a URL or { hf } model comes from: its id (the URL of its first file), its files (a split model's parts are
// named name-0000i-of-0000N.gguf beside each other) and, asked of the server, their sizes — and for Hugging Face
// their sha256, which its API gives for every LFS file.
import { AbortError, ModelLoadError } from '../../errors.ts';
import type { HfFile, Progress } from '../../types.ts';

export type WebSource = string | { hf: HfFile };

/** A URL or { hf } source: what is downloaded, and kept in the model store unless the load says store: false. */
export function isWebSource(source: unknown): source is WebSource {
  return typeof source === 'string' || (!!source && typeof source === 'object' && 'hf' in source);
}

export interface WebOptions {
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** Where { hf } sources are fetched from. Default https://huggingface.co. */
  hfEndpoint?: string;
  /** Download a { hf } model whose sha256 the Hub's API does not give (unreachable, rate-limited, a mirror without the
   * API): checked by size only. Without it that is ModelLoadError 'checksum_unavailable'. */
  allowUnverified?: boolean;
}

/** A download's options: a size limit and progress besides WebOptions. */
export interface FetchOptions extends WebOptions {
  /** Models larger than this are refused (before a download, where the size is announced). */
  maxBytes?: number;
  onProgress?: (p: Progress) => void;
  /** Checks the files on the server before they are downloaded (the GPU engine: the heap's share, from the header
   * read by ranges); a refusal it throws ends the load with nothing downloaded. */
  checkBefore?: (files: WebFile[]) => Promise<void>;
}

export interface WebFile {
  name: string;
  url: string;
  /** null when the server does not say (no Content-Length). */
  size: number | null;
  sha256: string | null;
  /** The server's ETag, to tell a changed file from the one a paused download started on. */
  etag: string | null;
}

export interface WebModel {
  id: string;
  files: WebFile[];
}

export const DEFAULT_HF = 'https://huggingface.co';
const SPLIT = /-(\d{5})-of-(\d{5})\.gguf$/;

/** The model's id and the URLs of its files, without any network request. */
export function webUrls(source: WebSource, hfEndpoint = DEFAULT_HF): { id: string; urls: string[] } {
  const url = typeof source === 'string' ? checkedUrl(source) : hfUrl(source.hf, hfEndpoint);
  const urls = splitNames(url);
  return { id: urls[0]!, urls };
}

/** A split model's parts in order (name-0000i-of-0000N.gguf), else the one name. */
export function splitNames(name: string): string[] {
  const m = SPLIT.exec(name);
  if (!m) return [name];
  const count = Number(m[2]);
  if (count < 1 || Number(m[1]) < 1 || Number(m[1]) > count) return [name];
  const base = name.slice(0, m.index);
  return Array.from({ length: count }, (_, i) => `${base}-${String(i + 1).padStart(5, '0')}-of-${m[2]}.gguf`);
}

export function fileName(url: string): string {
  return decodeURIComponent(url.split(/[?#]/)[0]!.split('/').pop() || 'model.gguf');
}

/** Asks the server for the files' sizes (and Hugging Face for their sha256). */
export async function webModel(source: WebSource, opts: WebOptions): Promise<WebModel> {
  const { id, urls } = webUrls(source, opts.hfEndpoint);
  const fromHub = typeof source === 'object' ? await hubFiles(source.hf, urls, opts) : null;
  const files = fromHub ?? (await Promise.all(urls.map((url) => headFile(url, opts))));
  return { id, files };
}

function checkedUrl(source: string): string {
  try {
    return new URL(source, globalThis.location?.href).href;
  } catch {
    throw new ModelLoadError(`"${source}" is not a URL`, 'invalid_source');
  }
}

function hfUrl(hf: HfFile, defaultEndpoint: string): string {
  const repoOk = typeof hf.repo === 'string' && /^[\w.-]+\/[\w.-]+$/.test(hf.repo);
  const fileOk =
    typeof hf.file === 'string' && hf.file.length > 0 && !hf.file.startsWith('/') && !hf.file.includes('..');
  if (!repoOk || !fileOk) {
    throw new ModelLoadError(
      `Hugging Face source must look like { hf: { repo: "owner/name", file: "model.gguf" } }, got ${JSON.stringify(hf)}`,
      'invalid_source',
    );
  }
  const path = hf.file.split('/').map(encodeURIComponent).join('/');
  return `${hubEndpoint(hf, defaultEndpoint)}/${hf.repo}/resolve/${encodeURIComponent(hf.revision ?? 'main')}/${path}`;
}

/** The source's own endpoint (a mirror) if it names one, else the engine's; an absolute http(s) URL either way. */
export function hubEndpoint(hf: { endpoint?: string }, defaultEndpoint: string): string {
  const endpoint = hf.endpoint ?? defaultEndpoint;
  let url: URL | null = null;
  try {
    url = new URL(endpoint, globalThis.location?.href);
  } catch {}
  if (!url || !/^https?:$/.test(url.protocol)) {
    throw new ModelLoadError(`the Hub endpoint "${endpoint}" is not an http(s) URL`, 'invalid_source');
  }
  return url.href.replace(/\/$/, '');
}

interface HubEntry {
  type: string;
  path: string;
  size: number;
  lfs?: { oid: string; size: number };
}

/**
 * The files' sizes and sha256 from the Hub's tree API. When it cannot say (an HTTP error, no such API at a mirror),
 * that is ModelLoadError 'checksum_unavailable', or null (the files are asked for themselves) with allowUnverified.
 */
async function hubFiles(hf: HfFile, urls: string[], opts: WebOptions): Promise<WebFile[] | null> {
  const endpoint = hubEndpoint(hf, opts.hfEndpoint ?? DEFAULT_HF);
  const dir = hf.file.includes('/') ? hf.file.slice(0, hf.file.lastIndexOf('/')) : '';
  const api =
    `${endpoint}/api/models/${hf.repo}/tree/${encodeURIComponent(hf.revision ?? 'main')}` +
    (dir ? `/${dir.split('/').map(encodeURIComponent).join('/')}` : '');
  const unavailable = (why: string, details: Record<string, unknown> = {}) => {
    if (opts.allowUnverified) return null;
    throw new ModelLoadError(
      `the sha256 of ${hf.repo}/${hf.file} could not be obtained (${why}), and a download is only ` +
        'kept once checked against it. Try again later, or load with { allowUnverified: true } to check its size only.',
      'checksum_unavailable',
      { url: api, retryable: true, ...details },
    );
  };
  let entries: HubEntry[];
  try {
    const res = await fetchOk(api, opts);
    try {
      entries = (await res.json()) as HubEntry[];
    } catch {
      return unavailable(`${api} did not answer with the Hub's file list`);
    }
  } catch (err) {
    if (
      err instanceof ModelLoadError &&
      err.code === 'http_error' &&
      (err.details as { status?: number }).status === 404
    ) {
      throw new ModelLoadError(
        `Hugging Face has no repo ${hf.repo} at revision ${hf.revision ?? 'main'} (or it is private): ` +
          'check the repo name and revision.',
        'http_error',
        { url: api, status: 404 },
      );
    }
    if (err instanceof ModelLoadError && (err.code === 'http_error' || err.code === 'network_error')) {
      return unavailable(err.message, err.details);
    }
    throw err;
  }
  if (!Array.isArray(entries)) return unavailable(`${api} did not answer with the Hub's file list`);
  const files = urls.map((url) => {
    const path = (dir ? `${dir}/` : '') + fileName(url);
    const entry = entries.find((e) => e?.type === 'file' && e.path === path);
    if (!entry) {
      throw new ModelLoadError(
        `${hf.repo} has no file ${path} at revision ${hf.revision ?? 'main'}: check the file name ` +
          '(the repo\'s "Files" tab lists them).',
        'http_error',
        { url, status: 404 },
      );
    }
    const sha256 =
      typeof entry.lfs?.oid === 'string' && /^[0-9a-f]{64}$/i.test(entry.lfs.oid) ? entry.lfs.oid.toLowerCase() : null;
    const size = entry.lfs?.size ?? entry.size;
    return {
      name: fileName(url),
      url,
      size: Number.isSafeInteger(size) && size >= 0 ? size : null,
      sha256,
      etag: null,
    };
  });
  // A file kept outside LFS has a git blob id, not a sha256.
  const missing = files.find((f) => f.sha256 === null);
  return missing ? (unavailable(`the Hub lists no sha256 for ${missing.name}`) ?? files) : files;
}

/** Size and ETag from a HEAD request; a server that refuses HEAD leaves them unknown. */
async function headFile(url: string, opts: WebOptions): Promise<WebFile> {
  const file: WebFile = { name: fileName(url), url, size: null, sha256: null, etag: null };
  try {
    const res = await fetchOk(url, opts, { method: 'HEAD' });
    const length = res.headers.get('content-length');
    file.size = length !== null && /^\d+$/.test(length) ? Number(length) : null;
    file.etag = res.headers.get('etag');
  } catch (err) {
    // 404 and network failures are final; other refusals (405 for HEAD…) leave the download to find out.
    if (
      !(
        err instanceof ModelLoadError &&
        err.code === 'http_error' &&
        (err.details as { status?: number }).status !== 404
      )
    ) {
      throw err;
    }
  }
  return file;
}

/** A server that could not give a range of a file (it answered with the whole file, or not at all). */
export class NoRange extends Error {}

/**
 * Reads a file on a server by HTTP Range requests (a model's header before the download). Throws NoRange where the
 * server does not answer a range with one: the caller then learns what it wanted from the download instead.
 */
export function rangeReader(url: string, opts: WebOptions): (offset: number, length: number) => Promise<Uint8Array> {
  return async (offset, length) => {
    const res = await fetchOk(url, opts, { headers: { Range: `bytes=${offset}-${offset + length - 1}` } }).catch(
      (err: Error) => {
        if (err instanceof AbortError) throw err;
        throw new NoRange(err.message);
      },
    );
    if (res.status !== 206) {
      await res.body?.cancel(); // the whole file: not read here
      throw new NoRange(`${url} answered a range request with HTTP ${res.status}`);
    }
    const bytes = new Uint8Array(await res.arrayBuffer());
    // Fewer bytes than asked for (a server that caps ranges) would read as a file cut short.
    if (bytes.length !== length) throw new NoRange(`${url} answered a range of ${length} bytes with ${bytes.length}`);
    return bytes;
  };
}

/** fetch() that turns a network failure, an abort or an HTTP error into Hearth's errors. */
export async function fetchOk(url: string, opts: WebOptions, init: RequestInit = {}): Promise<Response> {
  let res: Response;
  try {
    res = await (opts.fetch ?? fetch)(url, { ...init, signal: init.signal ?? opts.signal });
  } catch (err) {
    if (opts.signal?.aborted || init.signal?.aborted) throw new AbortError('model download aborted');
    throw new ModelLoadError(
      `could not fetch ${url}: ${(err as Error).message}. Check the URL and your connection.`,
      'network_error',
      { url },
    );
  }
  if (!res.ok) {
    throw new ModelLoadError(
      `fetching ${url} failed with HTTP ${res.status} ${res.statusText}`.trim() +
        (res.status === 404 ? ': no file there; check the URL (for Hugging Face: repo, file name and revision).' : '.'),
      'http_error',
      { url, status: res.status },
    );
  }
  return res;
}
