// Stop strings may span tokens ("###" can arrive as "#" + "##"), so text that could still become a stop string is
// held back until it can be told apart. A matched stop string is never emitted.
export class StopMatcher {
  private pending = '';
  private readonly stops: string[];

  constructor(stops: string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  /** Adds text; returns what can be emitted now and whether a stop string was reached. */
  push(text: string): { emit: string; stopped: boolean } {
    this.pending += text;
    let first = -1;
    for (const s of this.stops) {
      const at = this.pending.indexOf(s);
      if (at >= 0 && (first < 0 || at < first)) first = at;
    }
    if (first >= 0) {
      const emit = this.pending.slice(0, first);
      this.pending = '';
      return { emit, stopped: true };
    }
    const keep = heldBack(this.pending, this.stops);
    const emit = this.pending.slice(0, this.pending.length - keep);
    this.pending = this.pending.slice(this.pending.length - keep);
    return { emit, stopped: false };
  }

  /** The rest, at the end of generation. */
  flush(): string {
    const rest = this.pending;
    this.pending = '';
    return rest;
  }
}

/** Length of the longest end of `text` that is a proper start of one of `markers` (it may still become that marker). */
export function heldBack(text: string, markers: string[]): number {
  let keep = 0;
  for (const m of markers) {
    for (let n = Math.min(m.length - 1, text.length); n > keep; n--) {
      if (text.endsWith(m.slice(0, n))) {
        keep = n;
        break;
      }
    }
  }
  return keep;
}
