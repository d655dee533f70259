// System prompt states kept in the worker's memory (JS heap, outside the wasm heap), most recently used last. A few
// of them, and not more than MAX_BYTES together: with an f32 KV cache a 1,000-token prompt of a 3B model is ~230 MB.

export interface SystemState {
  tokens: Int32Array;
  data: Uint8Array;
}

const MAX_ENTRIES = 4;
const MAX_BYTES = 256 * 1024 ** 2;

export class SystemStates {
  private readonly states = new Map<string, SystemState>();

  get size(): number {
    return this.states.size;
  }

  get(key: string): SystemState | undefined {
    return this.states.get(key);
  }

  /** Keeps `state` as the most recently used; the oldest go when over the limits (the newest always stays). */
  keep(key: string, state: SystemState): void {
    this.states.delete(key);
    this.states.set(key, state);
    while (this.states.size > MAX_ENTRIES || (this.states.size > 1 && this.bytes() > MAX_BYTES)) {
      this.states.delete(this.states.keys().next().value!);
    }
  }

  delete(key: string): void {
    this.states.delete(key);
  }

  clear(): void {
    this.states.clear();
  }

  private bytes(): number {
    let n = 0;
    for (const s of this.states.values()) n += s.data.length;
    return n;
  }
}
