// The shared-tabs protocol's messages (src/api/shared/wire.ts): anything on the channel that is not a well-formed
// message of this protocol version and build is ignored — another deploy's tabs, another script of the origin, garbage.
import { describe, expect, it } from 'vitest';
import { BUILD_ID } from '../../src/core/build.ts';
import { lockNames, PROTOCOL, readWire, stamp } from '../../src/api/shared/wire.ts';

describe('shared-tabs wire', () => {
  const call = {
    kind: 'call',
    term: 't',
    tab: 'a',
    id: 1,
    method: 'complete',
    argument: {},
    model: null,
    progress: false,
    chunks: true,
  } as const;

  it('reads what this build writes', () => {
    for (const m of [
      { kind: 'hello' },
      { kind: 'leader', term: 't', ready: true },
      { kind: 'bye', tab: 'a' },
      call,
      { kind: 'accepted', term: 't', tab: 'a', id: 1 },
      { kind: 'result', term: 't', tab: 'a', id: 1, result: { ok: true, value: 3 } },
    ] as const) {
      expect(readWire(stamp(m))).toEqual(stamp(m));
    }
  });

  it('ignores another protocol version or build, and messages of the wrong shape', () => {
    expect(readWire({ ...stamp({ kind: 'hello' }), v: PROTOCOL - 1 })).toBeNull();
    expect(readWire({ ...stamp({ kind: 'hello' }), build: `${BUILD_ID}-other` })).toBeNull();
    expect(readWire({ kind: 'hello' })).toBeNull(); // unstamped: an older Hearth
    for (const bad of [
      { ...call, method: 'constructor' },
      { ...call, id: -1 },
      { ...call, id: 1.5 },
      { ...call, tab: '' },
      { ...call, model: 'x' },
      { kind: 'leader', term: 't', ready: 'yes' },
      { kind: 'result', term: 't', tab: 'a', id: 1, result: { ok: false, error: 'x' } },
      { kind: 'chunk', term: 't', tab: 'a', id: 1, value: null },
      { kind: 'unknown' },
      null,
      'hello',
      42,
    ]) {
      expect(readWire(typeof bad === 'object' && bad ? { ...bad, v: PROTOCOL, build: BUILD_ID } : bad)).toBeNull();
    }
  });

  it("names its channel and locks by protocol and build, so another deploy's tabs form a group of their own", () => {
    const names = lockNames('site');
    expect(names.channel).toContain(`v${PROTOCOL}:${BUILD_ID}`);
    expect(names.tab('a').startsWith(names.tabPrefix)).toBe(true);
    expect(names.term('x')).not.toBe(names.leader);
  });
});
