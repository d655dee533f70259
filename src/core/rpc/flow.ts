// The one flow-control rule for a stream of chunks that crosses a boundary (worker → page, leader tab → tab): the
// sender hands chunks on without waiting for each acknowledgement, but never more than WINDOW ahead. Enough to hide
// the round trip; few enough that a reader who stops soon stops the decoding too.
export const WINDOW = 8;

export class ChunkWindow<T> {
  private readonly unacked: Array<Promise<void>> = [];

  /** `deliver` hands a chunk on and resolves when the other side has acknowledged it. */
  constructor(private readonly deliver: (item: T) => void | Promise<void>) {}

  /** Resolves once fewer than WINDOW chunks are unacknowledged. */
  readonly send = async (item: T): Promise<void> => {
    this.unacked.push(Promise.resolve(this.deliver(item)));
    if (this.unacked.length >= WINDOW) await this.unacked.shift();
  };

  /** Resolves when every chunk sent has been acknowledged. */
  async drain(): Promise<void> {
    await Promise.all(this.unacked);
  }
}
