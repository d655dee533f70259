// The model gate of a shared engine (src/api/shared/gate.ts): which model runs when tabs want different ones. The
// engine is replaced by a load function that records what it loaded; the e2e test (e2e/shared.spec.ts) runs the
// real engine across real tabs.
import { describe, expect, it } from 'vitest';
import type { LoadRequest } from '../../src/contract.ts';
import { AbortError } from '../../src/errors.ts';
import { ModelGate } from '../../src/api/shared/gate.ts';
import type { ModelInfo, Progress } from '../../src/types.ts';

const model = (key: string) => ({ key, request: { source: key, options: {} } });

function loader() {
  const loads: string[] = [];
  let release: () => void = () => {};
  const load = async (request: LoadRequest, control: { onProgress?: (p: Progress) => void; signal?: AbortSignal }) => {
    loads.push(request.source as string);
    control.onProgress?.({ phase: 'load', loaded: 1, total: 1 });
    await new Promise<void>((resolve) => (release = resolve));
    return { name: request.source } as ModelInfo;
  };
  return { loads, load, release: () => release() };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('ModelGate', () => {
  it('loads a model once for tabs that want it at the same time, and gives both its progress', async () => {
    const gate = new ModelGate();
    const { loads, load, release } = loader();
    const seen: string[] = [];
    const a = gate.enter(model('x'), load, { onProgress: () => seen.push('a') });
    const b = gate.enter(model('x'), load, { onProgress: () => seen.push('b') });
    await tick();
    release();
    expect((await a)?.name).toBe('x');
    expect((await b)?.name).toBe('x');
    expect(loads).toEqual(['x']);
    expect(seen).toEqual(['a']); // b joined after the load's only progress event; it is a listener from then on
  });

  it('switches models only when no request runs on the loaded one, so no tab is answered by another model', async () => {
    const gate = new ModelGate();
    const { loads, load, release } = loader();
    const first = gate.enter(model('x'), load, {});
    await tick();
    release();
    await first; // a request on x is running
    let yEntered = false;
    const y = gate.enter(model('y'), load, {}).then(() => (yEntered = true));
    await tick();
    expect(loads).toEqual(['x']); // y waits for the request on x
    const again = await gate.enter(model('x'), load, {}); // more work on x goes ahead meanwhile
    expect(again?.name).toBe('x');
    gate.leave();
    gate.leave();
    await tick();
    expect(loads).toEqual(['x', 'y']);
    release();
    await y;
    expect(yEntered).toBe(true);
    expect(gate.loaded).toBe('y');
  });

  it('a tab without a model uses the loaded one; an aborted wait rejects with AbortError', async () => {
    const gate = new ModelGate();
    const { load, release } = loader();
    const first = gate.enter(model('x'), load, {});
    await tick();
    release();
    await first;
    expect((await gate.enter(null, load, {}))?.name).toBe('x');
    const controller = new AbortController();
    const waiting = gate.enter(model('y'), load, { signal: controller.signal });
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortError);
  });

  it('a failed load leaves no model, and the next request loads its own', async () => {
    const gate = new ModelGate();
    const failing = () => Promise.reject(new Error('bad file'));
    await expect(gate.enter(model('x'), failing, {})).rejects.toThrow('bad file');
    expect(gate.loaded).toBe(null);
    const { loads, load, release } = loader();
    const next = gate.enter(model('x'), load, {});
    await tick();
    release();
    expect((await next)?.name).toBe('x');
    expect(loads).toEqual(['x']);
  });
});
