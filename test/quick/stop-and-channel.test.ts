// The pieces between the decode loop and the caller: stop strings across token boundaries, and the stream channel
// (back-pressure, early exit, errors before the first chunk).
import { describe, expect, it } from 'vitest';
import { Channel } from '../../src/api/channel.ts';
import { StopMatcher } from '../../src/core/chat/stop.ts';

function feed(stops: string[], pieces: string[]) {
  const m = new StopMatcher(stops);
  let out = '';
  for (const p of pieces) {
    const r = m.push(p);
    out += r.emit;
    if (r.stopped) return { out, stopped: true };
  }
  return { out: out + m.flush(), stopped: false };
}

describe('StopMatcher', () => {
  it('finds a stop string split over several pieces and emits nothing of it', () => {
    expect(feed(['###'], ['Hello #', '#', '# more'])).toEqual({ out: 'Hello ', stopped: true });
  });
  it('releases held-back text as soon as it cannot start a stop string', () => {
    const m = new StopMatcher(['STOP']);
    expect(m.push('abc S').emit).toBe('abc ');
    expect(m.push('T').emit).toBe('');
    expect(m.push('x').emit).toBe('STx');
  });
  it('stops at the earliest of several stop strings', () => {
    expect(feed(['world', 'lo'], ['Hello world'])).toEqual({ out: 'Hel', stopped: true });
  });
  it('gives back held text at the end when no stop string came', () => {
    expect(feed(['</end>'], ['a </e', 'n'])).toEqual({ out: 'a </en', stopped: false });
  });
});

describe('Channel', () => {
  it('delivers in order and slows the producer at the high-water mark', async () => {
    const ch = new Channel<number>(2);
    let resolved = 0;
    const pushes = [1, 2, 3].map((n) => ch.push(n).then(() => resolved++));
    await Promise.resolve();
    expect(resolved).toBe(1); // the second push filled the queue: it waits for room
    ch.end();
    const got: number[] = [];
    for await (const n of ch) got.push(n);
    await Promise.all(pushes);
    expect(got).toEqual([1, 2, 3]);
  });
  it('rejects ready when the producer fails before the first item, and the iterator throws', async () => {
    const ch = new Channel<number>(8);
    ch.fail(new Error('context full'));
    await expect(ch.ready).rejects.toThrow('context full');
    await expect(ch[Symbol.asyncIterator]().next()).rejects.toThrow('context full');
  });
  it('tells the producer when the consumer leaves early', async () => {
    let cancelled = false;
    const ch = new Channel<number>(16, () => (cancelled = true));
    void ch.push(1);
    void ch.push(2);
    for await (const n of ch) if (n === 1) break;
    expect(cancelled).toBe(true);
  });
});
