// Images and audio of a request, made ready before it is queued: each part's bytes fetched or read (a data: URL, an
// http(s) URL, a Blob, base64 audio), bounded, sniffed and hashed. The request's parts then name their media by hash
// (`hearth-media:<sha256>`), so the cache's message hash tells one image from another, and the bytes travel beside
// the messages in order (CompletionRequest.media). Anything that cannot be used is an InvalidRequestError naming the
// part, before anything runs.
import type { CompletionRequest, RequestMedia } from '../../contract.ts';
import { AbortError, InvalidRequestError } from '../../errors.ts';
import type { ChatMessage, ContentPart } from '../../types.ts';
import { base64ToBytes } from '../bytes.ts';
import { sha256InMemory } from '../models/sha256.ts';

/** Bounds on a request's media (docs/api.md, "Images and audio"). */
export const MEDIA_LIMITS = {
  /** Images and audio clips in one request. */
  items: 16,
  /** Bytes of one file (its encoded form: PNG, JPEG, WAV…). */
  bytes: 20 * 1024 * 1024,
  /** Pixels along either side of an image (the projector scales it down anyway; this bounds the decoded size). */
  side: 8192,
} as const;

const PREFIX = 'hearth-media:';

/** What the engine can take: which kinds its projector reads. */
export interface MediaSupport {
  image: boolean;
  audio: boolean;
}

/**
 * The request's media resolved: its parts rewritten to name their media by hash, the bytes in request.media.
 * Requests without media come back as they are.
 */
export async function resolveMedia(
  req: CompletionRequest,
  support: MediaSupport | null,
  opts: { fetch?: typeof fetch; signal?: AbortSignal },
): Promise<CompletionRequest> {
  const found = req.messages
    .flatMap((m, i) =>
      Array.isArray(m.content) ? m.content.map((part, j) => ({ part, at: `messages[${i}].content[${j}]` })) : [],
    )
    .filter(({ part }) => part.type !== 'text');
  if (!found.length) return req;
  for (const { part, at } of found) {
    const kind = part.type === 'image_url' ? 'image' : 'audio';
    if (!support?.[kind]) {
      const why = support
        ? `the loaded model's projector reads no ${kind === 'image' ? 'images' : 'audio'}`
        : 'the loaded model has no projector';
      throw new InvalidRequestError(
        `${at}: ${why}; load a model with a projector that does: engine.load(model, { projector })`,
        kind === 'image' ? 'images_not_supported' : 'audio_not_supported',
        { param: at },
      );
    }
  }
  if (found.length > MEDIA_LIMITS.items) {
    throw new InvalidRequestError(
      `messages: ${found.length} images and audio clips, at most ${MEDIA_LIMITS.items} per request`,
      'too_many_media',
      { param: 'messages' },
    );
  }
  const media: RequestMedia[] = [];
  const refs = new Map<ContentPart, string>();
  for (const { part, at } of found) {
    const item = await readPart(part, at, opts);
    media.push(item);
    refs.set(part, PREFIX + item.hash);
  }
  const messages: ChatMessage[] = req.messages.map((m) =>
    Array.isArray(m.content)
      ? { ...m, content: m.content.map((p) => (refs.has(p) ? refPart(p, refs.get(p)!) : p)) }
      : m,
  );
  return { ...req, messages, media };
}

/** The part with its media replaced by the hash reference (what the cache hashes and the template never sees). */
function refPart(part: ContentPart, ref: string): ContentPart {
  if (part.type === 'image_url') return { type: 'image_url', image_url: { url: ref } };
  if (part.type === 'input_audio') {
    return { type: 'input_audio', input_audio: { data: ref, format: part.input_audio.format } };
  }
  return part;
}

/** A media part as the text the model's template renders: the projector's marker. */
export function markerText(content: ChatMessage['content'], marker: string): ChatMessage['content'] {
  if (!Array.isArray(content) || content.every((p) => p.type === 'text')) return content;
  return content.map((p) => (p.type === 'text' ? p : { type: 'text', text: marker }));
}

/** A short stable name for a media part in a message hash (its hash reference, or the URL as written). */
export function mediaName(part: ContentPart): string {
  if (part.type === 'image_url') return typeof part.image_url.url === 'string' ? part.image_url.url : 'blob';
  if (part.type === 'input_audio') {
    return typeof part.input_audio.data === 'string' ? part.input_audio.data.slice(0, 80) : 'blob';
  }
  return '';
}

async function readPart(
  part: ContentPart,
  at: string,
  opts: { fetch?: typeof fetch; signal?: AbortSignal },
): Promise<RequestMedia> {
  const kind = part.type === 'image_url' ? 'image' : 'audio';
  const invalid = (why: string) =>
    new InvalidRequestError(`${at}: ${why}`, kind === 'image' ? 'invalid_image' : 'invalid_audio', { param: at });
  let bytes: Uint8Array;
  if (part.type === 'image_url') {
    const url = part.image_url?.url;
    if (isBlob(url)) bytes = await blobBytes(url, at);
    else if (typeof url === 'string' && url.startsWith('data:')) bytes = dataUrlBytes(url, invalid);
    else if (typeof url === 'string' && /^https?:\/\//i.test(url)) bytes = await fetchBytes(url, at, opts, invalid);
    else throw invalid('image_url.url must be a data: URL, an http(s) URL, or a Blob/File');
  } else if (part.type === 'input_audio') {
    const data = part.input_audio?.data;
    if (isBlob(data)) bytes = await blobBytes(data, at);
    else if (typeof data === 'string') bytes = base64Bytes(data, invalid);
    else throw invalid('input_audio.data must be the file in base64, or a Blob/File');
  } else {
    throw invalid('unknown content part');
  }
  if (!bytes.length) throw invalid('the file is empty');
  if (kind === 'image') checkImage(bytes, invalid);
  return { kind, bytes, hash: await sha256InMemory(bytes) };
}

const isBlob = (v: unknown): v is Blob => typeof Blob !== 'undefined' && v instanceof Blob;

function tooLarge(at: string, size: number): InvalidRequestError {
  return new InvalidRequestError(
    `${at}: the file is ${(size / 1048576).toFixed(1)} MiB, at most ${MEDIA_LIMITS.bytes / 1048576} MiB`,
    'media_too_large',
    { param: at },
  );
}

async function blobBytes(blob: Blob, at: string): Promise<Uint8Array> {
  if (blob.size > MEDIA_LIMITS.bytes) throw tooLarge(at, blob.size);
  return new Uint8Array(await blob.arrayBuffer());
}

function dataUrlBytes(url: string, invalid: (why: string) => Error): Uint8Array {
  const comma = url.indexOf(',');
  if (comma < 0) throw invalid('a data: URL needs a comma before its data');
  const head = url.slice(5, comma);
  if (!head.endsWith(';base64')) return new TextEncoder().encode(decodeURIComponent(url.slice(comma + 1)));
  return base64Bytes(url.slice(comma + 1), invalid);
}

function base64Bytes(text: string, invalid: (why: string) => Error): Uint8Array {
  if (text.length > Math.ceil(MEDIA_LIMITS.bytes / 3) * 4 + 4) {
    throw invalid(`the file is over ${MEDIA_LIMITS.bytes / 1048576} MiB`);
  }
  if (text.startsWith(PREFIX)) throw invalid('a hearth-media: reference is not a file');
  try {
    return base64ToBytes(text.replace(/\s+/g, ''));
  } catch {
    throw invalid('the data is not valid base64');
  }
}

/** An http(s) image, read up to the size limit (the engine fetches it: the page's CSP connect-src applies). */
async function fetchBytes(
  url: string,
  at: string,
  opts: { fetch?: typeof fetch; signal?: AbortSignal },
  invalid: (why: string) => Error,
): Promise<Uint8Array> {
  let res: Response;
  try {
    res = await (opts.fetch ?? fetch)(url, { signal: opts.signal, credentials: 'omit' });
  } catch (err) {
    if (opts.signal?.aborted) throw new AbortError();
    throw invalid(`could not fetch ${url}: ${(err as Error).message}`);
  }
  if (!res.ok || !res.body) throw invalid(`fetching ${url} failed with HTTP ${res.status}`);
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MEDIA_LIMITS.bytes) {
      void reader.cancel();
      throw tooLarge(at, size);
    }
    parts.push(value);
  }
  const out = new Uint8Array(size);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * The image's format and size from its header, before anything decodes it: a small file can announce a huge image
 * (a decompression bomb), and only the formats the decoder (stb_image) reads are taken.
 */
export function imageSize(b: Uint8Array): { format: string; width: number; height: number } | null {
  const be16 = (o: number) => (b[o]! << 8) | b[o + 1]!;
  const be32 = (o: number) => ((b[o]! << 24) >>> 0) + (b[o + 1]! << 16) + (b[o + 2]! << 8) + b[o + 3]!;
  const le16 = (o: number) => b[o]! | (b[o + 1]! << 8);
  const le32 = (o: number) => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + ((b[o + 3]! << 24) >>> 0);
  if (b.length >= 24 && be32(0) === 0x89504e47 && be32(12) === 0x49484452) {
    return { format: 'png', width: be32(16), height: be32(20) };
  }
  if (b.length >= 10 && b[0] === 0x47 && b[1] === 0x49 && b[2] === 0x46) {
    return { format: 'gif', width: le16(6), height: le16(8) };
  }
  if (b.length >= 26 && b[0] === 0x42 && b[1] === 0x4d) {
    return { format: 'bmp', width: Math.abs(le32(18) | 0), height: Math.abs(le32(22) | 0) };
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    // JPEG: walk the segments to the frame header (SOF0..SOF15 but DHT, JPG, DAC).
    let o = 2;
    while (o + 9 < b.length) {
      if (b[o] !== 0xff) return null;
      const marker = b[o + 1]!;
      if (marker === 0xff) {
        o++;
        continue;
      }
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { format: 'jpeg', width: be16(o + 7), height: be16(o + 5) };
      }
      o += 2 + be16(o + 2);
    }
  }
  return null;
}

function checkImage(bytes: Uint8Array, invalid: (why: string) => Error) {
  const size = imageSize(bytes);
  if (!size) throw invalid('not an image this engine decodes: send PNG, JPEG, GIF or BMP');
  if (!size.width || !size.height || size.width > MEDIA_LIMITS.side || size.height > MEDIA_LIMITS.side) {
    throw invalid(`the image is ${size.width} x ${size.height} pixels; each side must be 1 to ${MEDIA_LIMITS.side}`);
  }
}
