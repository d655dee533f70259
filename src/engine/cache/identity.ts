// What a saved state is valid for (the model file, the llama.cpp build, the KV cache's layout) and the keys records
// are stored under.
import type { ModelFile } from '../source.ts';
import { hashText, hashBytes, hashTokens } from './hash.ts';
import { FORMAT_VERSION } from './store.ts';

/** Identifies a model without reading all of it: its size, its header (metadata) and the end of its weights. */
export async function fingerprintFile(file: ModelFile): Promise<string> {
  const first = file.parts[0]!;
  const last = file.parts[file.parts.length - 1]!;
  const head = await first.read(0, Math.min(first.size, 1 << 20));
  const tail = await last.read(Math.max(0, last.size - (1 << 20)), Math.min(last.size, 1 << 20));
  return `${file.size}-${hashBytes(head)}-${hashBytes(tail)}`;
}

/**
 * The layout string every record carries and is checked against. n_ctx is not part of it: a sequence's state is its
 * cells and their positions, and a record is only restored into a context large enough for it.
 */
export function layoutKey(fingerprint: string, llamaBuild: string, kv: { typeK: string; typeV: string; flashAttn: number }): string {
  return JSON.stringify({ format: FORMAT_VERSION, model: fingerprint, llama: llamaBuild, typeK: kv.typeK, typeV: kv.typeV, flashAttn: kv.flashAttn, unified: true });
}

const NAMED = 'conversation:id:';

/** The record key of a conversation named by conversation_id. */
export const conversationKey = (id: string) => NAMED + id;

/** Whether a record key is a conversation_id's (else the conversation is matched by its content). */
export const isNamedConversation = (key: string) => key.startsWith(NAMED);

/** The record key of a rendered system prefix (its tokens under this layout and chat template). */
export function systemKey(layout: string, templateHash: string, tokens: Int32Array): string {
  return `system:${hashText(layout)}:${templateHash}:${hashTokens(tokens)}`;
}
