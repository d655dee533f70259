// An async-iterable queue between a producer (the decode loop, or the worker's messages) and a `for await`
// consumer. push() resolves once the queue is below its high-water mark, so a slow consumer slows the producer
// instead of piling up chunks; fail() ends the iteration with an error; a consumer that stops early (break)
// triggers onCancel so the producer can stop generating.
export class Channel<T> implements AsyncIterable<T> {
  private queue: T[] = [];
  private done = false;
  private error: unknown = null;
  private readers: Array<{ resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }> = [];
  private roomWaiters: Array<() => void> = [];
  private iterated = false;
  private started!: (ok: boolean, err?: unknown) => void;
  /**
   * Settles with the first item (or the end): rejects when the producer failed before producing anything. Lets
   * create({stream: true}) reject with e.g. ContextFullError instead of handing out a stream that fails at once.
   */
  readonly ready: Promise<void>;

  constructor(
    private readonly highWater: number,
    private readonly onCancel: () => void = () => {},
  ) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.started = (ok, err) => (ok ? resolve() : reject(err));
    });
    this.ready.catch(() => {}); // observed by whoever awaits it; never an unhandled rejection
  }

  push(item: T): Promise<void> {
    if (this.done) return Promise.resolve();
    this.started(true);
    const reader = this.readers.shift();
    if (reader) {
      reader.resolve({ value: item, done: false });
      return Promise.resolve();
    }
    this.queue.push(item);
    if (this.queue.length < this.highWater) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  end() {
    this.finish(null);
  }

  fail(error: unknown) {
    this.finish(error ?? new Error('stream failed'));
  }

  private finish(error: unknown) {
    if (this.done) return;
    this.started(!error, error);
    this.done = true;
    this.error = error;
    for (const r of this.readers.splice(0)) {
      if (error) r.reject(error);
      else r.resolve({ value: undefined, done: true });
    }
    this.releaseRoom();
  }

  private releaseRoom() {
    for (const w of this.roomWaiters.splice(0)) w();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.iterated) throw new Error('this stream can be iterated only once');
    this.iterated = true;
    return {
      next: () => {
        if (this.queue.length) {
          const value = this.queue.shift()!;
          if (this.queue.length < this.highWater) this.releaseRoom();
          return Promise.resolve({ value, done: false });
        }
        if (this.done) {
          return this.error ? Promise.reject(this.error) : Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => this.readers.push({ resolve, reject }));
      },
      return: () => {
        if (!this.done) {
          this.onCancel();
          this.finish(null);
        }
        this.queue = [];
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
