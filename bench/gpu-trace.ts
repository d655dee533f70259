// Where a GPU engine's time goes, as JavaScript sees it: every WebGPU call counted and timed (synchronous calls: the
// time inside them; calls that return a promise — buffer maps, queue waits — the time until it settles, which is
// the wait for the GPU). Wraps the WebGPU classes' methods on globalThis (Dawn for Node's); for benchmarks only.
type Stat = { calls: number; ms: number };
const stats = new Map<string, Stat>();
const CLASSES = ['GPUDevice', 'GPUQueue', 'GPUCommandEncoder', 'GPUComputePassEncoder', 'GPUBuffer'];

export function traceWebGpu(): void {
  for (const cls of CLASSES) {
    const proto = (globalThis as unknown as Record<string, { prototype?: Record<string, unknown> }>)[cls]?.prototype;
    if (!proto) continue;
    for (const key of Object.getOwnPropertyNames(proto)) {
      const fn = Object.getOwnPropertyDescriptor(proto, key)?.value;
      if (typeof fn !== 'function' || key === 'constructor') continue;
      const name = `${cls}.${key}`;
      proto[key] = function (this: unknown, ...args: unknown[]) {
        const t0 = performance.now();
        const s = stats.get(name) ?? stats.set(name, { calls: 0, ms: 0 }).get(name)!;
        s.calls++;
        const r = fn.apply(this, args);
        if (r instanceof Promise) return r.finally(() => (s.ms += performance.now() - t0));
        s.ms += performance.now() - t0;
        return r;
      };
    }
  }
}

/** The calls since the last take, busiest first, and clears them. */
export function takeTrace(): Array<{ call: string } & Stat> {
  const out = [...stats].map(([call, s]) => ({ call, ...s })).sort((a, b) => b.ms - a.ms);
  stats.clear();
  return out;
}
