// Speculative decoding's options (ChatCompletionCreateParams.speculative, LoadOptions.speculative), checked the same
// wherever they come from.
import type { Speculative } from '../contract.ts';
import { invalidParameter as bad } from '../errors.ts';

export const DEFAULT_DRAFT = 4;
export const MAX_DRAFT = 16;
/** llama.cpp's default for the least probability of a draft model's guess (common.h, --draft-p-min): none. */
export const DEFAULT_P_MIN = 0;

const KINDS = "expected 'ngram' (guesses from the conversation itself) or 'draft' (the draft model's)";

/** The refusal of { kind: 'draft' } where there is no draft model: at load (an engine default) and per request. */
export function noDraftModel(param: string): never {
  bad(
    `${param}.kind`,
    "kind 'draft' needs a draft model: load the model with { draft: <a smaller model of its family> }, or use kind 'ngram'",
  );
}

/** `v` checked (null: off); an InvalidRequestError 'invalid_parameter' names `param` otherwise. */
export function resolveSpeculative(v: unknown, param: string): Speculative | null {
  if (v === null) return null;
  if (!v || typeof v !== 'object') bad(param, "expected { kind: 'ngram' | 'draft', n_draft?, p_min? } or null");
  const { kind, n_draft: n, p_min: p, ...rest } = v as { kind?: unknown; n_draft?: unknown; p_min?: unknown };
  if (kind !== 'ngram' && kind !== 'draft') bad(`${param}.kind`, `${KINDS}, got ${JSON.stringify(kind)}`);
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) bad(`${param}.${extra}`, 'not an option of speculative decoding (kind, n_draft, p_min)');
  if (n !== undefined && (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_DRAFT)) {
    bad(`${param}.n_draft`, `expected an integer from 1 to ${MAX_DRAFT}, got ${JSON.stringify(n)}`);
  }
  if (p !== undefined && kind !== 'draft') bad(`${param}.p_min`, "only kind 'draft' takes p_min");
  if (p !== undefined && (typeof p !== 'number' || !(p >= 0 && p <= 1))) {
    bad(`${param}.p_min`, `expected a probability from 0 to 1, got ${JSON.stringify(p)}`);
  }
  return {
    kind,
    nDraft: (n as number | undefined) ?? DEFAULT_DRAFT,
    pMin: (p as number | undefined) ?? DEFAULT_P_MIN,
  };
}
