// A prompt state file: the KV state of a prompt's first tokens (a site's system prompt), computed once by the site
// owner (engine.cache.exportPrompt, `npx hearth prompt-state`) and shipped beside the model, so a first visitor
// restores it instead of prefilling it. Layout ("Prompt state files" in docs/kv-cache.md says the same):
//
//   bytes 0–7   "HEARTHPS"
//   bytes 8–11  header length H, uint32 little-endian
//   12 … 12+H   header, UTF-8 JSON (PromptStateHeader)
//   the rest    the state: llama_state_seq_get_data of one sequence holding exactly `tokens` (cells and, for a
//               recurrent or hybrid model, the recurrent state after the last token)
//
// The file comes from the network: every field is checked, and a file that does not match the loaded model, build
// and KV layout, or whose bytes do not add up, is never restored (the engine prefills cold and says why).
import { hashBytes } from '../../../core/hash.ts';
import { layoutKey } from '../cache/identity.ts';

export const PROMPT_STATE_MAGIC = 'HEARTHPS';
/** Bump when the header or the layout changes. */
export const PROMPT_STATE_FORMAT = 1;
/** llama.h's LLAMA_STATE_SEQ_VERSION of the pinned llama.cpp (test/prompt-state.test.ts checks it against llama.h). */
export const LLAMA_STATE_SEQ_VERSION = 3;
/** A header is a few kB per thousand tokens; anything near this is not one. */
const MAX_HEADER_BYTES = 16 * 1024 ** 2;
const PREFIX_BYTES = 12;

export interface PromptStateHeader {
  format: number;
  /** The model's identity (sha256 of its files, as the model store and the KV records name it). */
  model: string;
  /** llama.cpp's release, commit and Hearth's patches (engine.info().llamaBuild). */
  llama: string;
  stateVersion: number;
  typeK: string;
  typeV: string;
  flashAttn: number;
  /** engine.info().model.memory.kind when written, for the reader's information. */
  memory: string;
  /** The prompt tokens whose state follows. */
  tokens: number[];
  /** Length and hashBytes of the state. */
  bytes: number;
  sum: string;
}

/** What a loaded file gives the cache. */
export interface PromptState {
  header: PromptStateHeader;
  tokens: Int32Array;
  data: Uint8Array;
}

/** The file for `data`, the state of `header.tokens`. */
export function writePromptState(
  header: Omit<PromptStateHeader, 'format' | 'stateVersion' | 'bytes' | 'sum'>,
  data: Uint8Array,
): Blob {
  const full: PromptStateHeader = {
    format: PROMPT_STATE_FORMAT,
    stateVersion: LLAMA_STATE_SEQ_VERSION,
    ...header,
    bytes: data.length,
    sum: hashBytes(data),
  };
  const json = new TextEncoder().encode(JSON.stringify(full));
  const prefix = new Uint8Array(PREFIX_BYTES);
  prefix.set(new TextEncoder().encode(PROMPT_STATE_MAGIC));
  new DataView(prefix.buffer).setUint32(8, json.length, true);
  return new Blob([prefix, json, data] as BlobPart[], { type: 'application/octet-stream' });
}

/** Why the first bytes of a download are not a prompt state file, or null (the model store stops such a download). */
export function notPromptStateStart(head: Uint8Array): string | null {
  const want = new TextEncoder().encode(PROMPT_STATE_MAGIC);
  for (let i = 0; i < Math.min(head.length, want.length); i++) {
    if (head[i] !== want[i]) return `it does not start with "${PROMPT_STATE_MAGIC}"`;
  }
  return null;
}

/** A file read in slices: a Blob (blobReader), or a model store's file (ModelPart). */
export interface Readable {
  size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

export const blobReader = (blob: Blob): Readable => ({
  size: blob.size,
  read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()),
});

/** The header of a prompt state file, checked in every field; throws PromptStateMismatch saying what is wrong. */
export async function readPromptStateHeader(file: Readable): Promise<{ header: PromptStateHeader; offset: number }> {
  if (file.size < PREFIX_BYTES) throw new PromptStateMismatch(`the file is ${file.size} bytes, too short to be one`);
  const prefix = (await file.read(0, PREFIX_BYTES)).slice();
  const start = notPromptStateStart(prefix);
  if (start) throw new PromptStateMismatch(`it is not a prompt state file: ${start}`);
  const length = new DataView(prefix.buffer).getUint32(8, true);
  if (length > MAX_HEADER_BYTES || PREFIX_BYTES + length > file.size) {
    throw new PromptStateMismatch('its header is cut off or damaged');
  }
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(await file.read(PREFIX_BYTES, length)));
  } catch {
    throw new PromptStateMismatch('its header is damaged (not JSON)');
  }
  const h = header as PromptStateHeader;
  if (!h || typeof h !== 'object' || h.format !== PROMPT_STATE_FORMAT) {
    throw new PromptStateMismatch(
      `it is of format ${JSON.stringify((h as { format?: unknown } | null)?.format)}, this version of Hearth reads format ${PROMPT_STATE_FORMAT}`,
    );
  }
  const text = (v: unknown) => typeof v === 'string' && v.length < 1024;
  const count = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
  if (
    ![h.model, h.llama, h.typeK, h.typeV, h.memory, h.sum].every(text) ||
    ![h.stateVersion, h.flashAttn, h.bytes].every(count) ||
    !Array.isArray(h.tokens) ||
    !h.tokens.length ||
    !h.tokens.every((t) => Number.isInteger(t) && t >= 0 && t < 2 ** 31)
  ) {
    throw new PromptStateMismatch('its header is damaged (a field is missing or of the wrong type)');
  }
  const offset = PREFIX_BYTES + length;
  if (file.size - offset !== h.bytes) {
    throw new PromptStateMismatch(
      `it holds ${file.size - offset} bytes of state where its header announces ${h.bytes}: the file is truncated or damaged`,
    );
  }
  return { header: h, offset };
}

/** Where a loaded model, build and KV cache can take the state (else what differs). */
export interface StateTarget {
  identity: string;
  llamaBuild: string;
  kv: { typeK: string; typeV: string; flashAttn: number };
  nVocab: number;
}

/** The state of a file checked against the loaded model; throws PromptStateMismatch saying what differs. */
export async function readPromptState(file: Readable, target: StateTarget): Promise<PromptState> {
  const { header: h, offset } = await readPromptStateHeader(file);
  if (h.model !== target.identity) {
    throw new PromptStateMismatch('it was written for another model file (another model or quantization)');
  }
  if (h.llama !== target.llamaBuild || h.stateVersion !== LLAMA_STATE_SEQ_VERSION) {
    throw new PromptStateMismatch(
      `it was written by llama.cpp ${h.llama} (state format ${h.stateVersion}); this engine runs ${target.llamaBuild} ` +
        `(state format ${LLAMA_STATE_SEQ_VERSION}): write it again with this version`,
    );
  }
  if (layoutKey(h.model, h.llama, h) !== layoutKey(target.identity, target.llamaBuild, target.kv)) {
    throw new PromptStateMismatch(
      `its KV cache is ${h.typeK}/${h.typeV}${h.flashAttn ? ' with flash attention' : ''}, the model is loaded ` +
        `with ${target.kv.typeK}/${target.kv.typeV}${target.kv.flashAttn ? ' with flash attention' : ''}: load it with cacheTypeK '${h.typeK}' ` +
        `and cacheTypeV '${h.typeV}', or write the state for this layout`,
    );
  }
  if (h.tokens.some((t) => t >= target.nVocab)) {
    throw new PromptStateMismatch("its tokens are not of this model's vocabulary");
  }
  const data = await file.read(offset, h.bytes);
  if (hashBytes(data) !== h.sum) {
    throw new PromptStateMismatch('its state does not match its checksum: the file is damaged');
  }
  return { header: h, tokens: Int32Array.from(h.tokens), data };
}

/** A prompt state file that cannot be used here; the message says why (it becomes a warning, never a failed load). */
export class PromptStateMismatch extends Error {
  override name = 'PromptStateMismatch';
}
