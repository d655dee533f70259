// Where a GPU engine's time goes, as JavaScript sees it: every WebGPU call counted and timed (synchronous calls: the
// time inside them; calls that return a promise — buffer maps, queue waits — the time until it settles, which is the
// wait for the GPU), set calls that repeat what their pass had set, and what wasm/webgpu/library_webgpu.js reports
// through globalThis.hearthGpuTrace: the waits that suspended the wasm (JSPI) and the graphs it replayed. Wraps the
// WebGPU classes' methods on globalThis (Dawn for Node's) once; for benchmarks and tests.
type Stat = { calls: number; ms: number; waits: boolean };
/** What library_webgpu.js counts (its names). */
type Hooks = { suspensions: number; suspendedMs: number; replays: number };

const stats = new Map<string, Stat>();
const hooks: Hooks = { suspensions: 0, suspendedMs: 0, replays: 0 };
let repeatedSets = 0;
/** The last pipeline and bind group (group 0) each pass set. */
const lastSet = new WeakMap<object, { pipeline?: unknown; group?: unknown }>();
const CLASSES = ['GPUDevice', 'GPUQueue', 'GPUCommandEncoder', 'GPUComputePassEncoder', 'GPUBuffer'];
let installed = false;

export function traceWebGpu(): void {
  (globalThis as { hearthGpuTrace?: Hooks }).hearthGpuTrace = hooks;
  if (installed) return;
  installed = true;
  for (const cls of CLASSES) {
    const proto = (globalThis as unknown as Record<string, { prototype?: Record<string, unknown> }>)[cls]?.prototype;
    if (!proto) continue;
    for (const key of Object.getOwnPropertyNames(proto)) {
      const fn = Object.getOwnPropertyDescriptor(proto, key)?.value;
      if (typeof fn !== 'function' || key === 'constructor') continue;
      const name = `${cls}.${key}`;
      proto[key] = function (this: object, ...args: unknown[]) {
        if (cls === 'GPUComputePassEncoder') noteRepeat(this, key, args);
        const t0 = performance.now();
        const s = stats.get(name) ?? stats.set(name, { calls: 0, ms: 0, waits: false }).get(name)!;
        s.calls++;
        const r = fn.apply(this, args);
        if (r instanceof Promise) {
          s.waits = true;
          return r.finally(() => (s.ms += performance.now() - t0));
        }
        s.ms += performance.now() - t0;
        return r;
      };
    }
  }
}

function noteRepeat(pass: object, key: string, args: unknown[]) {
  const last = lastSet.get(pass) ?? lastSet.set(pass, {}).get(pass)!;
  if (key === 'setPipeline') {
    if (last.pipeline === args[0]) repeatedSets++;
    last.pipeline = args[0];
  } else if (key === 'setBindGroup' && args[0] === 0) {
    if (last.group === args[1]) repeatedSets++;
    last.group = args[1];
  }
}

export interface GpuTrace {
  /** Per call name: how often, and the time (see the top). */
  calls: Record<string, { calls: number; ms: number; waits: boolean }>;
  repeatedSets: number;
  suspensions: number;
  suspendedMs: number;
  replays: number;
}

/** What was traced since the last take, and clears it. */
export function takeTrace(): GpuTrace {
  const out: GpuTrace = {
    calls: Object.fromEntries([...stats].map(([k, s]) => [k, { ...s }])),
    repeatedSets,
    ...hooks,
  };
  stats.clear();
  repeatedSets = 0;
  Object.assign(hooks, { suspensions: 0, suspendedMs: 0, replays: 0 });
  return out;
}

/** `a` less `b`: what happened in a longer run beyond a shorter one. */
export function traceDiff(a: GpuTrace, b: GpuTrace): GpuTrace {
  const calls: GpuTrace['calls'] = {};
  for (const [k, s] of Object.entries(a.calls)) {
    const o = b.calls[k];
    calls[k] = { calls: s.calls - (o?.calls ?? 0), ms: s.ms - (o?.ms ?? 0), waits: s.waits };
  }
  return {
    calls,
    repeatedSets: a.repeatedSets - b.repeatedSets,
    suspensions: a.suspensions - b.suspensions,
    suspendedMs: a.suspendedMs - b.suspendedMs,
    replays: a.replays - b.replays,
  };
}

/** The counts that say how much host work a step costs, per step (a token, or a whole prompt). */
export interface TraceCounts {
  /** Every call into WebGPU. */
  calls: number;
  dispatches: number;
  setPipeline: number;
  setBindGroup: number;
  /** setPipeline / setBindGroup calls that set what their pass had set already. */
  repeatedSets: number;
  bindGroupsCreated: number;
  encoders: number;
  passes: number;
  submits: number;
  writeBuffer: number;
  mapAsync: number;
  /** Waits that suspended the wasm (JSPI); from a build that does not count them, its maps and queue waits. */
  suspensions: number;
  /** Graphs issued from a record (wasm/patches/0035). */
  replays: number;
  /** Wall time of the step. */
  ms: number;
  /** Of it: suspended, waiting for the GPU. */
  gpuWaitMs: number;
  /** Of it: inside WebGPU's synchronous calls. */
  webgpuMs: number;
  /** The rest: the wasm (llama.cpp, ggml, the sampler) and the engine's JavaScript. */
  wasmMs: number;
}

/** `t` per step, over `steps` steps that took `ms` of wall time together. */
export function traceCounts(t: GpuTrace, steps: number, ms: number): TraceCounts {
  const n = (name: string) => t.calls[name]?.calls ?? 0;
  let calls = 0;
  let webgpuMs = 0;
  let waits = 0;
  let waitMs = 0;
  for (const s of Object.values(t.calls)) {
    calls += s.calls;
    if (s.waits) {
      waits += s.calls;
      waitMs += s.ms;
    } else webgpuMs += s.ms;
  }
  // A build without library_webgpu.js's count (an older one, to compare): its maps' and queue waits' own time.
  const suspended = t.suspensions > 0 ? t.suspendedMs : waitMs;
  const per = (v: number) => Math.round((v / steps) * 100) / 100;
  const wait = Math.min(suspended, ms);
  return {
    calls: per(calls),
    dispatches: per(n('GPUComputePassEncoder.dispatchWorkgroups')),
    setPipeline: per(n('GPUComputePassEncoder.setPipeline')),
    setBindGroup: per(n('GPUComputePassEncoder.setBindGroup')),
    repeatedSets: per(t.repeatedSets),
    bindGroupsCreated: per(n('GPUDevice.createBindGroup')),
    encoders: per(n('GPUDevice.createCommandEncoder')),
    passes: per(n('GPUCommandEncoder.beginComputePass')),
    submits: per(n('GPUQueue.submit')),
    writeBuffer: per(n('GPUQueue.writeBuffer')),
    mapAsync: per(n('GPUBuffer.mapAsync')),
    suspensions: per(t.suspensions > 0 ? t.suspensions : waits),
    replays: per(t.replays),
    ms: per(ms),
    gpuWaitMs: per(wait),
    webgpuMs: per(webgpuMs),
    wasmMs: per(Math.max(0, ms - wait - webgpuMs)),
  };
}
