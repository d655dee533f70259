// Guesses for speculative decoding from the conversation itself (prompt lookup): the tokens that followed the last
// earlier occurrence of its last few tokens. A reply that rewrites, quotes or edits its input repeats long runs of
// it, and each run is guessed whole after its first few tokens.

/** The longest and shortest run of last tokens looked up: one or two tokens alone match too often by chance. */
const LONGEST = 4;
const SHORTEST = 2;

/**
 * Up to `n` tokens that followed the last earlier occurrence of `history`'s last LONGEST (else fewer, down to
 * SHORTEST) tokens; none when they occur nowhere before. Never a media placeholder (negative: no token to decode).
 */
export function ngramDraft(history: ArrayLike<number>, n: number): number[] {
  const len = history.length;
  for (let size = Math.min(LONGEST, len - 1); size >= SHORTEST; size--) {
    // The latest start before the tail itself whose `size` tokens equal the tail's.
    for (let start = len - size - 1; start >= 0; start--) {
      let k = 0;
      while (k < size && history[start + k] === history[len - size + k]) k++;
      if (k < size) continue;
      const out: number[] = [];
      for (let i = start + size; i < len && out.length < n && history[i]! >= 0; i++) out.push(history[i]!);
      if (out.length) return out;
    }
  }
  return [];
}
