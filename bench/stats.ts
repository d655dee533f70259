export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Order of the engines in repetition `rep`: rotated, so no engine always runs first (or right after another). */
export function rotate<T>(items: T[], rep: number): T[] {
  const k = rep % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}
