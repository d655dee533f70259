// Background saves to IndexedDB: one queue per record key (a conversation's turns are written in order), totals
// for engine.cache.stats(), and flush() for callers that must wait (tests, a page about to navigate away).

export class SaveQueue {
  private readonly pending = new Map<string, Promise<void>>();
  readonly totals = { count: 0, bytes: 0, ms: 0 };

  /** Runs `job` after the jobs already queued for `key`. A failing job is logged: the chat never fails for a save. */
  add(key: string, job: () => Promise<void>): void {
    const prev = this.pending.get(key) ?? Promise.resolve();
    const next = prev
      .then(job)
      .catch((err) => console.warn(`[hearth] could not save the KV cache: ${(err as Error).message}`));
    this.pending.set(key, next);
    void next.then(() => {
      if (this.pending.get(key) === next) this.pending.delete(key);
    });
  }

  /** Counts a completed save: bytes written and the time spent exporting and writing them. */
  count(bytes: number, ms: number): void {
    this.totals.count++;
    this.totals.bytes += bytes;
    this.totals.ms += ms;
  }

  /** Resolves when every save queued so far is written. */
  async flush(): Promise<void> {
    while (this.pending.size) await Promise.all(this.pending.values());
  }
}
