// What a saved state is valid for (the model file, the llama.cpp build, the KV cache's layout) and the keys records
// are stored under.
import type { Progress } from '../../../types.ts';
import { modelIdentity, sha256Hex } from '../../../core/models/sha256.ts';
import type { ModelFile } from '../../../core/models/file.ts';
import { hashText, hashTokens } from '../../../core/hash.ts';

/** Bump when the record layout changes: older records are deleted, never read. 3: media placeholders drawn from two
 * ranges, one of which takes no position (binding/mtmd.ts). */
export const FORMAT_VERSION = 3;

const blobHashes = new WeakMap<Blob, string>();

/**
 * The model's identity: the sha256 of its files. The model store computed it at download; for a File, a Blob or a
 * file on disk it is computed here, reading the whole file once ('verify' progress), and remembered for that Blob.
 */
export async function fileIdentity(
  file: ModelFile,
  opts: { onProgress?: (p: Progress) => void; signal?: AbortSignal } = {},
): Promise<string> {
  if (file.identity) return file.identity;
  let loaded = 0;
  const report = (n: number) => opts.onProgress?.({ phase: 'verify', loaded: (loaded += n), total: file.size });
  const hashes: string[] = [];
  for (const part of file.parts) {
    let hash = part.blob ? blobHashes.get(part.blob) : undefined;
    hash ??= part.sha256 ? await part.sha256() : await sha256Hex(part, report, opts.signal);
    if (part.blob) blobHashes.set(part.blob, hash);
    hashes.push(hash);
  }
  return modelIdentity(hashes);
}

/**
 * The layout string every record carries and is checked against. n_ctx is not part of it: a sequence's state is its
 * cells and their positions, and a record is only restored into a context large enough for it.
 */
export function layoutKey(
  identity: string,
  llamaBuild: string,
  kv: { typeK: string; typeV: string; flashAttn: number },
): string {
  return JSON.stringify({
    format: FORMAT_VERSION,
    model: identity,
    llama: llamaBuild,
    typeK: kv.typeK,
    typeV: kv.typeV,
    flashAttn: kv.flashAttn,
    unified: true,
  });
}

const NAMED = 'conversation:id:';

/** The record key of a conversation named by conversation_id, under one layout: the same conversation on another
 * model (or KV type) keeps a record of its own, so loading one model never deletes another's state. */
export const conversationKey = (id: string, layout: string) => `${NAMED}${hashText(layout)}:${id}`;

/** The conversation_id a record key names (any layout), or null for a conversation matched by content. */
export const namedConversationId = (key: string) => (key.startsWith(NAMED) ? key.slice(NAMED.length + 17) : null);

/** Whether a record key is a conversation_id's (else the conversation is matched by its content). */
export const isNamedConversation = (key: string) => key.startsWith(NAMED);

/** The record key of a rendered system prefix (its tokens under this layout and chat template). */
export function systemKey(layout: string, templateHash: string, tokens: Int32Array): string {
  return `system:${hashText(layout)}:${templateHash}:${hashTokens(tokens)}`;
}
