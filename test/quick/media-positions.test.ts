// Media placeholders and the positions a token list gives (binding/mtmd.ts): an M-RoPE image of n tokens takes nPos
// positions, and the text after it goes on from there, whatever else in the list came before.
import { describe, expect, it } from 'vitest';
import { isPlaceholder, placeholders, positionAt } from '../../src/backends/llamacpp/binding/mtmd.ts';

describe('media placeholders and positions', () => {
  it('an image of 16 tokens in 4 positions: the text after it is 12 positions short of its index', () => {
    const image = placeholders('id:a:0', 16, 4);
    const tokens = [1, 2, 3, ...image, 4, 5];
    expect(image.every(isPlaceholder)).toBe(true);
    expect(positionAt(tokens, 3)).toBe(3); // the image's first cell
    expect(positionAt(tokens, 3 + 16)).toBe(3 + 4); // the text after it
    expect(positionAt(tokens, tokens.length)).toBe(tokens.length - 12);
    // Positions never go back, and each text token takes one.
    for (let i = 1; i <= tokens.length; i++)
      expect(positionAt(tokens, i) - positionAt(tokens, i - 1)).toBeGreaterThanOrEqual(0);
  });

  it('without M-RoPE every placeholder takes a position: positions are indices', () => {
    const tokens = [7, ...placeholders('id:a:0', 16), 8, ...placeholders('id:b:0', 9), 9];
    for (let i = 0; i <= tokens.length; i++) expect(positionAt(tokens, i)).toBe(i);
  });

  it('the same image gives the same tokens, another image other tokens; none is a vocabulary id', () => {
    expect(placeholders('p:x:0', 8, 3)).toEqual(placeholders('p:x:0', 8, 3));
    const other = new Set(placeholders('p:y:0', 8, 3));
    expect(placeholders('p:x:0', 8, 3).some((t) => other.has(t))).toBe(false);
    for (const name of ['a', 'b', 'c', 'ddddddddddddddddd', '']) {
      for (const t of placeholders(name, 64, 8)) {
        expect(t).toBeLessThan(0);
        expect(t).toBeGreaterThanOrEqual(-(2 ** 31));
      }
    }
  });

  it("two M-RoPE images: the second starts where the first one's positions end", () => {
    const tokens = [0, ...placeholders('a', 6, 3), 1, ...placeholders('b', 20, 5), 2];
    expect(positionAt(tokens, 1 + 6)).toBe(1 + 3);
    expect(positionAt(tokens, 1 + 6 + 1)).toBe(5); // the second image's first cell
    expect(positionAt(tokens, tokens.length - 1)).toBe(5 + 5);
  });
});
