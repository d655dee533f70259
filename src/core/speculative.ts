// Speculative decoding's options (ChatCompletionCreateParams.speculative, LoadOptions.speculative), checked the same
// wherever they come from.
import type { Speculative } from '../contract.ts';
import { invalidParameter as bad } from '../errors.ts';

export const DEFAULT_DRAFT = 4;
export const MAX_DRAFT = 16;

/** `v` checked (null: off); an InvalidRequestError 'invalid_parameter' names `param` otherwise. */
export function resolveSpeculative(v: unknown, param: string): Speculative | null {
  if (v === null) return null;
  if (!v || typeof v !== 'object') bad(param, "expected { kind: 'ngram', n_draft? } or null");
  const { kind, n_draft: n, ...rest } = v as { kind?: unknown; n_draft?: unknown };
  if (kind !== 'ngram') {
    bad(`${param}.kind`, `expected 'ngram' (guesses from the conversation itself), got ${JSON.stringify(kind)}`);
  }
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) bad(`${param}.${extra}`, 'not an option of speculative decoding (kind, n_draft)');
  if (n !== undefined && (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_DRAFT)) {
    bad(`${param}.n_draft`, `expected an integer from 1 to ${MAX_DRAFT}, got ${JSON.stringify(n)}`);
  }
  return { kind, nDraft: (n as number | undefined) ?? DEFAULT_DRAFT };
}
