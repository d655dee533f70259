// The guesses speculative decoding checks (backends/llamacpp/run/ngram.ts): what followed the last earlier occurrence
// of the conversation's last few tokens.
import { describe, expect, it } from 'vitest';
import { ngramDraft } from '../../src/backends/llamacpp/run/ngram.ts';

describe('n-gram guesses', () => {
  it('guesses what followed the tail the last time it occurred', () => {
    // "1 2 3" occurred twice before; the later one was followed by 7 8 9.
    expect(ngramDraft([1, 2, 3, 4, 5, 1, 2, 3, 7, 8, 9, 0, 1, 2, 3], 3)).toEqual([7, 8, 9]);
    expect(ngramDraft([1, 2, 3, 4, 5, 1, 2, 3, 7, 8, 9, 0, 1, 2, 3], 8)).toEqual([7, 8, 9, 0, 1, 2, 3]);
  });

  it('prefers the longest matching tail', () => {
    // The last 2 tokens (5 6) occur at index 1 (followed by 9); the last 3 (4 5 6) at index 4 (followed by 1).
    expect(ngramDraft([0, 5, 6, 9, 4, 5, 6, 1, 2, 4, 5, 6], 1)).toEqual([1]);
  });

  it('guesses nothing from a tail that occurs nowhere before, or from a single token', () => {
    expect(ngramDraft([1, 2, 3, 4, 5, 6], 4)).toEqual([]);
    expect(ngramDraft([1, 2, 3, 1], 4)).toEqual([]);
    expect(ngramDraft([], 4)).toEqual([]);
  });

  it('never guesses a media placeholder', () => {
    expect(ngramDraft([1, 2, -5, -6, 3, 1, 2], 4)).toEqual([]);
    expect(ngramDraft([1, 2, 7, -5, 3, 1, 2], 4)).toEqual([7]);
  });
});
