// webgpu.h — the C API llama.cpp's WebGPU backend (ggml-webgpu) is written against — over the JavaScript WebGPU API
// (navigator.gpu), as an emscripten JS library: the 56 entry points ggml-webgpu calls, nothing more.
//
// Why our own: emscripten's port of it (emdawnwebgpu) is downloaded from the internet at build time and ships in no
// Debian or npm package; trixie's emscripten has only the old, incompatible -sUSE_WEBGPU.
//
// - Objects are handles: small integers into one table, with the reference counts webgpu.h's AddRef/Release keep.
//   A buffer's last Release destroys it, so a model's GPU memory goes with the model, not with the garbage collector.
// - Every function has its signature (__sig): emscripten's own library declares the old webgpu.h's, and with a 4 GB
//   heap the 'p' arguments are read unsigned.
// - Struct layouts come from wasm/webgpu/layout.cpp, compiled against the same header (WGPU_LAYOUT, made by
//   wasm/build.mjs into a library loaded before this one).
// - Asynchronous work (adapter, device, buffer maps, queue completion) returns a WGPUFuture; wgpuInstanceWaitAny is
//   the one import that suspends the wasm (JSPI) until a future completes. Callbacks run there, on the wasm's own
//   stack, never from a browser task: a callback that aborts (ggml aborts on a device error) then unwinds through the
//   export that waited, where the engine catches it, instead of escaping into the worker's event loop.
// - Device loss and uncaptured errors are kept until the next wait and reported there; Module.hearthGpuEvent (when
//   the host set it) hears them as they happen ('lost', 'error', and 'allocation' for a buffer that could not be
//   allocated, with its size and the bytes the other buffers hold).
// - Per-dispatch costs are cut where the JS API's calls are dear (tens of microseconds each through Dawn for Node):
//   ggml-webgpu creates a bind group for every dispatch of every token, the same ones token after token, so bind
//   groups are kept by what they bind and handed out again; and it writes each dispatch's parameters into its own
//   slot of a uniform buffer, so writes to small uniform buffers land in a copy here and go to the GPU as one write
//   per buffer just before the queue is next used (a uniform buffer changes only through writes, so the copy is
//   exact, gaps included).
// - Submits wait for the queue's next use: command buffers submitted in a row go to the GPU in one submit (a token's
//   graph and the copy of its logits), and anything else that uses the queue (a write, a map, a wait, a buffer
//   destroyed) sends them first, so the queue's order is what ggml asked for. A pass leaves out a setPipeline or
//   setBindGroup that repeats what it set last.
// - A graph ggml-webgpu recorded (wasm/patches/0035) is issued again by hearth_webgpu_replay: one call from the wasm
//   for all its kernels.
// - Waits have no deadline (a slow adapter is not a dead one); a lost device ends every wait.
// - globalThis.hearthGpuTrace, when a benchmark or test sets it (test/webgpu/gpu-trace.ts), counts what JavaScript
//   alone sees: the waits that suspended the wasm and for how long, and the graphs replayed.

// webgpu.h's WGPUFeatureName and WGPUWGSLLanguageFeatureName values, by the names the JavaScript API uses.
const WGPU_FEATURES = {
  9: 'timestamp-query',
  11: 'shader-f16',
  18: 'subgroups',
  // Matrix units (cooperative matrices on Vulkan, simdgroup matrices on Metal): where the browser offers it (Chrome
  // with unsafe WebGPU APIs allowed, Dawn with allow_unsafe_apis), ggml-webgpu's subgroup-matrix matmul and flash
  // attention run (wasm/patches/0036). WGPUFeatureName_ChromiumExperimentalSubgroupMatrix, 0x00050034.
  327732: 'chromium-experimental-subgroup-matrix',
};
// WGPUSubgroupMatrixComponentType values, by the names the JavaScript API uses.
const WGPU_MATRIX_TYPES = { f32: 1, f16: 2, u32: 3, i32: 4, u8: 5, i8: 6 };
const WGPU_WGSL_FEATURES = {
  1: 'readonly_and_readwrite_storage_textures',
  2: 'packed_4x8_integer_dot_product',
  3: 'unrestricted_pointer_parameters',
  4: 'pointer_composite_access',
  5: 'uniform_buffer_standard_layout',
  6: 'subgroup_id',
  8: 'subgroup_uniformity',
};

const webgpuLibrary = {
  $WGPU_L: WGPU_LAYOUT,
  $WebGPU__deps: ['$WGPU_L', '$stringToNewUTF8', '$UTF8ToString', '$getWasmTableEntry', 'malloc', 'free'],
  $WebGPU__postset: 'WebGPU.init();',
  $WebGPU: {
    objects: [null],
    freeHandles: [],
    // future id -> { done, result, fire(result), promise }
    futures: {},
    nextFuture: 1,
    // Uncaptured errors and device losses, reported at the next wait.
    pending: [],
    // Every object's unique id (handles are reused; ids are not).
    uids: 0,
    // Bytes in live GPU buffers (what an allocation that fails is reported against).
    bytes: 0,
    // Made by init (emscripten writes this object out as source: a Map here would come out as {}): objects' ids
    // (WeakMap), bind groups by layout and entries (Map), the keys each buffer is part of (Map, forgotten when the
    // buffer goes), the uniform buffers written since the queue was last used (Set) and that queue.
    ids: null,
    groups: null,
    groupKeys: null,
    dirty: null,
    dirtyQueue: null,
    // Command buffers submitted and not yet sent, and their queue.
    commands: null,
    commandsQueue: null,
    // Settles when a device is lost: wakes every wait.
    lost: null,
    onLost: null,
    init() {
      WebGPU.ids = new WeakMap();
      WebGPU.groups = new Map();
      WebGPU.groupKeys = new Map();
      WebGPU.dirty = new Set();
      WebGPU.commands = [];
      WebGPU.lost = new Promise((resolve) => (WebGPU.onLost = resolve));
    },
    features: WGPU_FEATURES,
    wgslFeatures: WGPU_WGSL_FEATURES,
    matrixTypes: WGPU_MATRIX_TYPES,

    add(object, extra) {
      const h = WebGPU.freeHandles.length ? WebGPU.freeHandles.pop() : WebGPU.objects.length;
      WebGPU.objects[h] = { object, refs: 1, uid: ++WebGPU.uids, ...extra };
      return h;
    },
    entry(h) {
      const e = WebGPU.objects[h];
      if (!e) throw new Error(`webgpu: handle ${h} is not live`);
      return e;
    },
    get(h) {
      return h ? WebGPU.entry(h).object : undefined;
    },
    addRef(h) {
      WebGPU.entry(h).refs++;
    },
    release(h) {
      const e = WebGPU.entry(h);
      if (--e.refs > 0) return;
      // A buffer's memory is freed with its last reference (webgpu.h), not when JS collects the object.
      if (e.mapped) WebGPU.destroy(e);
      WebGPU.forget(e);
      WebGPU.objects[h] = undefined;
      WebGPU.freeHandles.push(h);
    },
    unmap(e) {
      for (const p of e.mapped ?? []) _free(p);
      e.mapped = [];
    },
    destroy(e) {
      // Work already submitted may use it: that goes first.
      WebGPU.flush();
      WebGPU.bytes -= e.size ?? 0;
      e.size = 0;
      WebGPU.unmap(e);
      WebGPU.forget(e);
      e.object.destroy();
    },
    // A buffer going away: the bind groups that name it, and its unwritten bytes, with it.
    forget(e) {
      WebGPU.dirty.delete(e);
      for (const key of WebGPU.groupKeys.get(e.uid) ?? []) WebGPU.groups.delete(key);
      WebGPU.groupKeys.delete(e.uid);
    },
    idOf(object) {
      let id = WebGPU.ids.get(object);
      if (id === undefined) WebGPU.ids.set(object, (id = ++WebGPU.uids));
      return id;
    },
    // The command buffers submitted so far to the GPU, in one submit.
    send() {
      if (!WebGPU.commands.length) return;
      const list = WebGPU.commands;
      WebGPU.commands = [];
      WebGPU.commandsQueue.submit(list);
    },
    // Everything held back to the GPU: the uniform writes, then the command buffers.
    flush() {
      WebGPU.writes();
      WebGPU.send();
    },
    // The uniform buffers' pending bytes to the GPU, one write each (offsets and sizes on 4-byte bounds), after the
    // command buffers submitted before them.
    writes() {
      if (!WebGPU.dirty.size) return;
      WebGPU.send();
      for (const e of WebGPU.dirty) {
        const lo = e.dirty[0] & ~3;
        const hi = Math.min(e.mirror.length, (e.dirty[1] + 3) & ~3);
        WebGPU.dirtyQueue.writeBuffer(e.object, lo, e.mirror, lo, hi - lo);
        e.dirty = null;
      }
      WebGPU.dirty.clear();
    },

    u32(p) {
      return HEAPU32[p >> 2];
    },
    u64(p) {
      return HEAPU32[p >> 2] + HEAPU32[(p + 4) >> 2] * 4294967296;
    },
    setU64(p, v) {
      HEAPU32[p >> 2] = v % 4294967296;
      HEAPU32[(p + 4) >> 2] = Math.floor(v / 4294967296);
    },
    // WGPUStringView: { data, length }; length SIZE_MAX means NUL-terminated, data NULL means none.
    string(p) {
      const data = HEAPU32[(p + WGPU_L.WGPUStringView.data) >> 2];
      if (!data) return undefined;
      const length = HEAPU32[(p + WGPU_L.WGPUStringView.length) >> 2];
      return length === 0xffffffff ? UTF8ToString(data) : UTF8ToString(data, length);
    },
    setString(p, s) {
      HEAPU32[(p + WGPU_L.WGPUStringView.data) >> 2] = stringToNewUTF8(s ?? '');
      HEAPU32[(p + WGPU_L.WGPUStringView.length) >> 2] = 0xffffffff;
    },
    // Fills a WGPUAdapterPropertiesSubgroupMatrixConfigs from the adapter's info (the feature's configurations, in a
    // block the caller frees with wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers). A configuration of a type
    // webgpu.h does not name is left out: ggml-webgpu reads only f16 ones.
    setMatrixConfigs(p, info) {
      const P = WGPU_L.WGPUAdapterPropertiesSubgroupMatrixConfigs;
      const M = WGPU_L.WGPUSubgroupMatrixConfig;
      const configs = [...(info.subgroupMatrixConfigs ?? [])].filter(
        (c) => WebGPU.matrixTypes[c.componentType] && WebGPU.matrixTypes[c.resultComponentType],
      );
      const list = configs.length ? _malloc(configs.length * M.$size) : 0;
      configs.forEach((c, i) => {
        const at = list + i * M.$size;
        HEAPU32[(at + M.componentType) >> 2] = WebGPU.matrixTypes[c.componentType];
        HEAPU32[(at + M.resultComponentType) >> 2] = WebGPU.matrixTypes[c.resultComponentType];
        HEAPU32[(at + M.M) >> 2] = c.M;
        HEAPU32[(at + M.N) >> 2] = c.N;
        HEAPU32[(at + M.K) >> 2] = c.K;
      });
      HEAPU32[(p + P.configCount) >> 2] = configs.length;
      HEAPU32[(p + P.configs) >> 2] = list;
    },
    // Calls a webgpu.h callback with a message: (…args, WGPUStringView*, userdata1, userdata2).
    call(info, callbackOffset, args, message) {
      const fn = HEAPU32[(info + callbackOffset) >> 2];
      if (!fn) return;
      const ud1 = HEAPU32[(info + callbackOffset + 4) >> 2];
      const ud2 = HEAPU32[(info + callbackOffset + 8) >> 2];
      const view = _malloc(8);
      WebGPU.setString(view, message);
      try {
        getWasmTableEntry(fn)(...args, view, ud1, ud2);
      } finally {
        _free(HEAPU32[view >> 2]);
        _free(view);
      }
    },

    // A future: `promise` settles with what fire(result) passes to the C callback, in a wait.
    future(promise, fire) {
      const id = WebGPU.nextFuture++;
      const f = { done: false, result: undefined, fire };
      f.promise = promise.then(
        (result) => {
          f.done = true;
          f.result = result;
        },
        (err) => {
          f.done = true;
          f.error = err;
        },
      );
      WebGPU.futures[id] = f;
      return BigInt(id);
    },
    // Runs the callbacks of every finished future (webgpu.h allows spontaneous callbacks) and of pending events.
    settle() {
      for (const [id, f] of Object.entries(WebGPU.futures)) {
        if (!f.done) continue;
        delete WebGPU.futures[id];
        f.fire(f.result, f.error);
      }
      while (WebGPU.pending.length) WebGPU.pending.shift()();
    },

    limits(l) {
      // The limits this JS implementation knows and the browser names alike (webgpu.h's maxImmediateSize has no
      // JS counterpart yet).
      return WGPU_L.$limits.filter(([name]) => name in l);
    },
    errorType(error) {
      if (typeof GPUValidationError !== 'undefined' && error instanceof GPUValidationError) return 2;
      if (typeof GPUOutOfMemoryError !== 'undefined' && error instanceof GPUOutOfMemoryError) return 3;
      if (typeof GPUInternalError !== 'undefined' && error instanceof GPUInternalError) return 4;
      return 5;
    },
    notify(kind, message) {
      Module.hearthGpuEvent?.(kind, message);
    },
  },

  wgpuCreateInstance__deps: ['$WebGPU'],
  wgpuCreateInstance__sig: 'pp',
  wgpuCreateInstance: (_desc) => WebGPU.add({}),

  wgpuInstanceHasWGSLLanguageFeature__deps: ['$WebGPU'],
  wgpuInstanceHasWGSLLanguageFeature__sig: 'ipi',
  wgpuInstanceHasWGSLLanguageFeature: (_instance, feature) => {
    const name = WebGPU.wgslFeatures[feature];
    return name && globalThis.navigator?.gpu?.wgslLanguageFeatures?.has(name) ? 1 : 0;
  },

  wgpuInstanceRequestAdapter__deps: ['$WebGPU'],
  wgpuInstanceRequestAdapter__sig: 'jppp',
  wgpuInstanceRequestAdapter: (_instance, options, info) => {
    const opts = {};
    if (options) {
      const pp = WebGPU.u32(options + WGPU_L.WGPURequestAdapterOptions.powerPreference);
      if (pp === 1) opts.powerPreference = 'low-power';
      if (pp === 2) opts.powerPreference = 'high-performance';
      if (WebGPU.u32(options + WGPU_L.WGPURequestAdapterOptions.forceFallbackAdapter)) opts.forceFallbackAdapter = true;
    }
    const gpu = globalThis.navigator?.gpu;
    const promise = gpu ? gpu.requestAdapter(opts) : Promise.resolve(null);
    const cb = WGPU_L.WGPURequestAdapterCallbackInfo.callback;
    return WebGPU.future(promise, (adapter, err) => {
      // Success 1, Unavailable 3, Error 4
      if (adapter) {
        Module.hearthAdapter = adapter; // engine.info() names it (binding/llama.ts)
        // What a failure to use it is read against (stderr goes to the engine's log: binding/module.ts).
        Module.printErr?.(`webgpu: adapter with ${[...adapter.features].sort().join(', ') || 'no features'}`);
        WebGPU.call(info, cb, [1, WebGPU.add(adapter)]);
      } else if (err) WebGPU.call(info, cb, [4, 0], String(err?.message ?? err));
      else WebGPU.call(info, cb, [3, 0], gpu ? 'no WebGPU adapter' : 'WebGPU is not available here (navigator.gpu)');
    });
  },

  wgpuInstanceWaitAny__deps: ['$WebGPU'],
  wgpuInstanceWaitAny__sig: 'ipppj',
  wgpuInstanceWaitAny__async: true,
  wgpuInstanceWaitAny: async (_instance, count, infos, timeoutNS) => {
    const L = WGPU_L.WGPUFutureWaitInfo;
    const ids = [];
    for (let i = 0; i < count; i++) ids.push(WebGPU.u64(infos + i * L.$size + L.future));
    const finished = () => ids.some((id) => !WebGPU.futures[id] || WebGPU.futures[id].done);
    if (!finished()) {
      // A uint64 that arrives as a signed BigInt: UINT64_MAX (wait for ever, what ggml asks) is -1n here.
      const ns = BigInt.asUintN(64, BigInt(timeoutNS));
      if (ns === 0n) return 2; // TimedOut
      WebGPU.send();
      const waits = ids.map((id) => WebGPU.futures[id].promise);
      waits.push(WebGPU.lost);
      let timer;
      const ms = Number(ns / 1000000n);
      // Past setTimeout's range (about 24.8 days), for ever.
      if (ms < 2 ** 31) waits.push(new Promise((resolve) => (timer = setTimeout(resolve, ms))));
      const trace = globalThis.hearthGpuTrace;
      const t0 = trace ? performance.now() : 0;
      await Promise.race(waits);
      clearTimeout(timer);
      if (trace) {
        trace.suspensions++;
        trace.suspendedMs += performance.now() - t0;
      }
    }
    // Which of ours finished, before settle() forgets them.
    const done = ids.map((id) => !WebGPU.futures[id] || WebGPU.futures[id].done);
    WebGPU.settle();
    for (let i = 0; i < count; i++) HEAPU32[(infos + i * L.$size + L.completed) >> 2] = done[i] ? 1 : 0;
    return done.some(Boolean) ? 1 : 2; // Success : TimedOut
  },

  wgpuAdapterGetLimits__deps: ['$WebGPU'],
  wgpuAdapterGetLimits__sig: 'ipp',
  wgpuAdapterGetLimits: (adapter, out) => {
    const l = WebGPU.get(adapter).limits;
    for (const [name, off, size] of WGPU_L.$limits) {
      const v = l[name] ?? 0;
      if (size === 8) WebGPU.setU64(out + off, v);
      else HEAPU32[(out + off) >> 2] = v;
    }
    return 1; // WGPUStatus_Success
  },

  wgpuAdapterHasFeature__deps: ['$WebGPU'],
  wgpuAdapterHasFeature__sig: 'ipi',
  wgpuAdapterHasFeature: (adapter, feature) => {
    const name = WebGPU.features[feature];
    // Module.hearthShaderF16 false: llama.cpp takes the path of adapters without shader-f16 (binding/llama.ts).
    if (name === 'shader-f16' && Module.hearthShaderF16 === false) return 0;
    // Module.hearthSubgroupMatrix false: the register-tiled matmuls even where the adapter has matrix units.
    if (name === 'chromium-experimental-subgroup-matrix' && Module.hearthSubgroupMatrix === false) return 0;
    return name && WebGPU.get(adapter).features.has(name) ? 1 : 0;
  },

  wgpuAdapterGetInfo__deps: ['$WebGPU'],
  wgpuAdapterGetInfo__sig: 'ipp',
  wgpuAdapterGetInfo: (adapter, out) => {
    const a = WebGPU.get(adapter);
    const info = a.info ?? {};
    const L = WGPU_L.WGPUAdapterInfo;
    WebGPU.setString(out + L.vendor, info.vendor);
    WebGPU.setString(out + L.architecture, info.architecture);
    WebGPU.setString(out + L.device, info.device);
    WebGPU.setString(out + L.description, info.description);
    HEAPU32[(out + L.backendType) >> 2] = 2; // WebGPU
    HEAPU32[(out + L.adapterType) >> 2] = info.isFallbackAdapter || a.isFallbackAdapter ? 3 : 4; // CPU : Unknown
    HEAPU32[(out + L.vendorID) >> 2] = 0;
    HEAPU32[(out + L.deviceID) >> 2] = 0;
    HEAPU32[(out + L.subgroupMinSize) >> 2] = info.subgroupMinSize ?? 0;
    HEAPU32[(out + L.subgroupMaxSize) >> 2] = info.subgroupMaxSize ?? 0;
    // Chained structs the caller asked to be filled: WGPUAdapterPropertiesSubgroupMatrixConfigs (sType 0x5003B) is the
    // one we know.
    const C = WGPU_L.WGPUChainedStruct;
    for (let next = HEAPU32[(out + L.nextInChain) >> 2]; next; next = HEAPU32[(next + C.next) >> 2]) {
      if (HEAPU32[(next + C.sType) >> 2] === 0x5003b) WebGPU.setMatrixConfigs(next, info);
    }
    return 1;
  },

  wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers__deps: ['$WebGPU'],
  wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers__sig: 'vp',
  // The struct is passed by value, which wasm32's C ABI passes as a pointer to a copy.
  wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers: (props) => {
    _free(HEAPU32[(props + WGPU_L.WGPUAdapterPropertiesSubgroupMatrixConfigs.configs) >> 2]);
  },

  wgpuAdapterInfoFreeMembers__deps: ['$WebGPU'],
  wgpuAdapterInfoFreeMembers__sig: 'vp',
  wgpuAdapterInfoFreeMembers: (info) => {
    const L = WGPU_L.WGPUAdapterInfo;
    for (const f of [L.vendor, L.architecture, L.device, L.description]) _free(HEAPU32[(info + f) >> 2]);
  },

  wgpuAdapterRequestDevice__deps: ['$WebGPU'],
  wgpuAdapterRequestDevice__sig: 'jppp',
  wgpuAdapterRequestDevice: (adapter, desc, info) => {
    const a = WebGPU.get(adapter);
    const L = WGPU_L.WGPUDeviceDescriptor;
    const requiredFeatures = [];
    const requiredLimits = {};
    let lostInfo = 0;
    let errorInfo = 0;
    if (desc) {
      const n = WebGPU.u32(desc + L.requiredFeatureCount);
      const list = WebGPU.u32(desc + L.requiredFeatures);
      for (let i = 0; i < n; i++) {
        const name = WebGPU.features[HEAPU32[(list >> 2) + i]];
        if (name) requiredFeatures.push(name);
      }
      const limits = WebGPU.u32(desc + L.requiredLimits);
      if (limits) {
        for (const [name, off, size] of WebGPU.limits(a.limits)) {
          const v = size === 8 ? WebGPU.u64(limits + off) : HEAPU32[(limits + off) >> 2];
          // WGPU_LIMIT_U32_UNDEFINED / WGPU_LIMIT_U64_UNDEFINED: no requirement.
          if (v !== 0xffffffff && v < 2 ** 53 - 1) requiredLimits[name] = v;
        }
      }
      lostInfo = desc + L.deviceLostCallbackInfo;
      errorInfo = desc + L.uncapturedErrorCallbackInfo;
    }
    // The callbacks (function, userdata1, userdata2) are read now: the descriptor is the caller's and may be gone
    // when they fire.
    const copy = (p) => (p ? Array.from(HEAPU32.subarray(p >> 2, (p >> 2) + 3)) : [0, 0, 0]);
    const lost = copy(lostInfo && lostInfo + WGPU_L.WGPUDeviceLostCallbackInfo.callback);
    const uncaptured = copy(errorInfo && errorInfo + WGPU_L.WGPUUncapturedErrorCallbackInfo.callback);
    const cb = WGPU_L.WGPURequestDeviceCallbackInfo.callback;
    Module.hearthDeviceFeatures = requiredFeatures; // engine.info() says which shaders run (binding/llama.ts)
    return WebGPU.future(a.requestDevice({ requiredFeatures, requiredLimits }), (device, err) => {
      if (!device) {
        WebGPU.call(info, cb, [3, 0], String(err?.message ?? err)); // Error
        return;
      }
      const h = WebGPU.add(device);
      // The callbacks take a `const WGPUDevice*`.
      const self = _malloc(4);
      HEAPU32[self >> 2] = h;
      const fire = (saved, args, message) => {
        const tmp = _malloc(12);
        HEAPU32.set(saved, tmp >> 2);
        try {
          WebGPU.call(tmp, 0, args, message);
        } finally {
          _free(tmp);
        }
      };
      device.lost.then((e) => {
        WebGPU.notify('lost', `${e.reason}: ${e.message}`);
        WebGPU.onLost();
        // Destroyed 2, Unknown 1
        WebGPU.pending.push(() => fire(lost, [self, e.reason === 'destroyed' ? 2 : 1], e.message));
      });
      // ggml's callback for GPU errors (it aborts): uncaptured ones, and the allocations' (wgpuDeviceCreateBuffer).
      const entry = WebGPU.entry(h);
      entry.onError = (type, message) => WebGPU.pending.push(() => fire(uncaptured, [self, type], message));
      device.onuncapturederror = (ev) => {
        WebGPU.notify('error', ev.error.message);
        entry.onError(WebGPU.errorType(ev.error), ev.error.message);
      };
      WebGPU.call(info, cb, [1, h]);
    });
  },

  wgpuDeviceGetQueue__deps: ['$WebGPU'],
  wgpuDeviceGetQueue__sig: 'pp',
  wgpuDeviceGetQueue: (device) => WebGPU.add(WebGPU.get(device).queue),

  wgpuDeviceCreateBuffer__deps: ['$WebGPU'],
  wgpuDeviceCreateBuffer__sig: 'ppp',
  wgpuDeviceCreateBuffer: (device, desc) => {
    const L = WGPU_L.WGPUBufferDescriptor;
    const usage = WebGPU.u64(desc + L.usage);
    const size = WebGPU.u64(desc + L.size);
    const d = WebGPU.entry(device);
    const label = WebGPU.string(desc + L.label);
    // A buffer the GPU cannot hold (out of memory, or past a limit of the device) is told apart from other GPU
    // errors: its size and what the buffers already hold go with the error, so the engine can name them.
    d.object.pushErrorScope('out-of-memory');
    d.object.pushErrorScope('validation');
    let buffer;
    try {
      buffer = d.object.createBuffer({
        label,
        usage,
        size,
        mappedAtCreation: !!WebGPU.u32(desc + L.mappedAtCreation),
      });
    } finally {
      const held = WebGPU.bytes;
      Promise.all([d.object.popErrorScope(), d.object.popErrorScope()]).then(
        (errors) => {
          const error = errors.find(Boolean);
          if (!error) return;
          const message =
            `a GPU buffer of ${size} bytes${label ? ` (${label})` : ''} could not be allocated, with ${held} ` +
            `bytes in buffers already: ${error.message}`;
          WebGPU.notify('allocation', message);
          d.onError?.(WebGPU.errorType(error), message);
        },
        () => {},
      ); // a lost device's scopes: the loss is reported already
    }
    WebGPU.bytes += size;
    // Uniform (0x40) and CopyDst (0x08), small, not mapped at creation: written through the copy (see the top).
    const mirrored = (usage & 0x48) === 0x48 && size <= 1 << 20 && !WebGPU.u32(desc + L.mappedAtCreation);
    return WebGPU.add(buffer, { mapped: [], mirror: mirrored ? new Uint8Array(size) : null, dirty: null, size });
  },

  wgpuBufferGetSize__deps: ['$WebGPU'],
  wgpuBufferGetSize__sig: 'jp',
  wgpuBufferGetSize: (buffer) => BigInt(WebGPU.get(buffer).size),

  wgpuBufferDestroy__deps: ['$WebGPU'],
  wgpuBufferDestroy__sig: 'vp',
  wgpuBufferDestroy: (buffer) => WebGPU.destroy(WebGPU.entry(buffer)),

  wgpuBufferMapAsync__deps: ['$WebGPU'],
  wgpuBufferMapAsync__sig: 'jpjppp',
  wgpuBufferMapAsync: (buffer, mode, offset, size, info) => {
    WebGPU.flush();
    const b = WebGPU.get(buffer);
    const cb = WGPU_L.WGPUBufferMapCallbackInfo.callback;
    const promise = b.mapAsync(Number(mode), offset, size === 0xffffffff ? undefined : size);
    return WebGPU.future(promise, (_, err) => {
      // Success 1, Error 3, Aborted 4 (the buffer was unmapped or destroyed, or the device lost)
      if (!err) WebGPU.call(info, cb, [1]);
      else WebGPU.call(info, cb, [err.name === 'AbortError' ? 4 : 3], String(err.message ?? err));
    });
  },

  // ggml only reads what it maps, so the range is copied into the wasm heap once; Unmap frees the copy.
  wgpuBufferGetConstMappedRange__deps: ['$WebGPU'],
  wgpuBufferGetConstMappedRange__sig: 'pppp',
  wgpuBufferGetConstMappedRange: (buffer, offset, size) => {
    const e = WebGPU.entry(buffer);
    let range;
    try {
      range = new Uint8Array(e.object.getMappedRange(offset, size === 0xffffffff ? undefined : size));
    } catch {
      return 0;
    }
    const p = _malloc(range.length || 1);
    HEAPU8.set(range, p);
    e.mapped.push(p);
    return p;
  },

  wgpuBufferUnmap__deps: ['$WebGPU'],
  wgpuBufferUnmap__sig: 'vp',
  wgpuBufferUnmap: (buffer) => {
    const e = WebGPU.entry(buffer);
    WebGPU.unmap(e);
    e.object.unmap();
  },

  wgpuDeviceCreateShaderModule__deps: ['$WebGPU'],
  wgpuDeviceCreateShaderModule__sig: 'ppp',
  wgpuDeviceCreateShaderModule: (device, desc) => {
    const L = WGPU_L.WGPUShaderModuleDescriptor;
    const chain = WebGPU.u32(desc + L.nextInChain);
    // WGPUSType_ShaderSourceWGSL: the only source a browser takes.
    if (!chain || WebGPU.u32(chain + WGPU_L.WGPUChainedStruct.sType) !== 2) {
      throw new Error('webgpu: only WGSL shader modules are supported');
    }
    const code = WebGPU.string(chain + WGPU_L.WGPUShaderSourceWGSL.code);
    return WebGPU.add(WebGPU.get(device).createShaderModule({ label: WebGPU.string(desc + L.label), code }));
  },

  wgpuDeviceCreateComputePipeline__deps: ['$WebGPU'],
  wgpuDeviceCreateComputePipeline__sig: 'ppp',
  wgpuDeviceCreateComputePipeline: (device, desc) => {
    const L = WGPU_L.WGPUComputePipelineDescriptor;
    const S = WGPU_L.WGPUComputeState;
    const C = WGPU_L.WGPUConstantEntry;
    const state = desc + L.compute;
    const constants = {};
    const n = WebGPU.u32(state + S.constantCount);
    const list = WebGPU.u32(state + S.constants);
    for (let i = 0; i < n; i++) {
      const e = list + i * C.$size;
      constants[WebGPU.string(e + C.key)] = HEAPF64[(e + C.value) >> 3];
    }
    const layout = WebGPU.u32(desc + L.layout);
    const pipeline = WebGPU.get(device).createComputePipeline({
      label: WebGPU.string(desc + L.label),
      layout: layout ? WebGPU.get(layout) : 'auto',
      compute: {
        module: WebGPU.get(WebGPU.u32(state + S.module)),
        entryPoint: WebGPU.string(state + S.entryPoint),
        constants,
      },
    });
    return WebGPU.add(pipeline);
  },

  wgpuComputePipelineGetBindGroupLayout__deps: ['$WebGPU'],
  wgpuComputePipelineGetBindGroupLayout__sig: 'ppi',
  wgpuComputePipelineGetBindGroupLayout: (pipeline, index) => {
    // The same layout object each time, so that bind groups made with it can be found again.
    const p = WebGPU.entry(pipeline);
    p.layouts ??= [];
    p.layouts[index] ??= p.object.getBindGroupLayout(index);
    return WebGPU.add(p.layouts[index]);
  },

  wgpuDeviceCreateBindGroup__deps: ['$WebGPU'],
  wgpuDeviceCreateBindGroup__sig: 'ppp',
  wgpuDeviceCreateBindGroup: (device, desc) => {
    const L = WGPU_L.WGPUBindGroupDescriptor;
    const E = WGPU_L.WGPUBindGroupEntry;
    const entries = [];
    const buffers = [];
    const layout = WebGPU.get(WebGPU.u32(desc + L.layout));
    let key = String(WebGPU.idOf(layout));
    const n = WebGPU.u32(desc + L.entryCount);
    const list = WebGPU.u32(desc + L.entries);
    for (let i = 0; i < n; i++) {
      const e = list + i * E.$size;
      const buffer = WebGPU.entry(WebGPU.u32(e + E.buffer));
      const binding = WebGPU.u32(e + E.binding);
      const offset = WebGPU.u64(e + E.offset);
      // WGPU_WHOLE_SIZE (UINT64_MAX) reads back as 2^64: the rest of the buffer.
      const size = WebGPU.u64(e + E.size);
      key += `,${binding}:${buffer.uid}:${offset}:${size}`;
      buffers.push(buffer.uid);
      entries.push({ binding, resource: { buffer: buffer.object, offset, size: size >= 2 ** 64 ? undefined : size } });
    }
    let group = WebGPU.groups.get(key);
    if (!group) {
      group = WebGPU.get(device).createBindGroup({ label: WebGPU.string(desc + L.label), layout, entries });
      // Bounded: a model's graphs need a few thousand; past that (a growing context's shifting views), start over.
      if (WebGPU.groups.size >= 16384) {
        WebGPU.groups.clear();
        WebGPU.groupKeys.clear();
      }
      WebGPU.groups.set(key, group);
      for (const uid of buffers) {
        if (!WebGPU.groupKeys.has(uid)) WebGPU.groupKeys.set(uid, []);
        WebGPU.groupKeys.get(uid).push(key);
      }
    }
    return WebGPU.add(group);
  },

  wgpuDeviceCreateCommandEncoder__deps: ['$WebGPU'],
  wgpuDeviceCreateCommandEncoder__sig: 'ppp',
  wgpuDeviceCreateCommandEncoder: (device, desc) =>
    WebGPU.add(
      WebGPU.get(device).createCommandEncoder({
        label: desc ? WebGPU.string(desc + WGPU_L.WGPUCommandEncoderDescriptor.label) : undefined,
      }),
    ),

  wgpuCommandEncoderBeginComputePass__deps: ['$WebGPU'],
  wgpuCommandEncoderBeginComputePass__sig: 'ppp',
  wgpuCommandEncoderBeginComputePass: (encoder, desc) => {
    const L = WGPU_L.WGPUComputePassDescriptor;
    if (desc && WebGPU.u32(desc + L.timestampWrites)) {
      throw new Error('webgpu: timestamp writes are not supported (build without GGML_WEBGPU_GPU_PROFILE)');
    }
    const label = desc ? WebGPU.string(desc + L.label) : undefined;
    return WebGPU.add(WebGPU.get(encoder).beginComputePass({ label }));
  },

  wgpuCommandEncoderCopyBufferToBuffer__deps: ['$WebGPU'],
  wgpuCommandEncoderCopyBufferToBuffer__sig: 'vppjpjj',
  wgpuCommandEncoderCopyBufferToBuffer: (encoder, src, srcOffset, dst, dstOffset, size) =>
    WebGPU.get(encoder).copyBufferToBuffer(
      WebGPU.get(src),
      Number(srcOffset),
      WebGPU.get(dst),
      Number(dstOffset),
      Number(size),
    ),

  wgpuCommandEncoderFinish__deps: ['$WebGPU'],
  wgpuCommandEncoderFinish__sig: 'ppp',
  wgpuCommandEncoderFinish: (encoder, _desc) => WebGPU.add(WebGPU.get(encoder).finish()),

  wgpuComputePassEncoderSetPipeline__deps: ['$WebGPU'],
  wgpuComputePassEncoderSetPipeline__sig: 'vpp',
  wgpuComputePassEncoderSetPipeline: (pass, pipeline) => {
    const e = WebGPU.entry(pass);
    const p = WebGPU.get(pipeline);
    if (e.pipeline === p) return;
    e.pipeline = p;
    e.object.setPipeline(p);
  },

  wgpuComputePassEncoderSetBindGroup__deps: ['$WebGPU'],
  wgpuComputePassEncoderSetBindGroup__sig: 'vpippp',
  wgpuComputePassEncoderSetBindGroup: (pass, index, group, count, offsets) => {
    const e = WebGPU.entry(pass);
    const g = WebGPU.get(group);
    // Group 0 without dynamic offsets (all ggml sets) is remembered; anything else is set as asked and forgotten.
    const plain = index === 0 && !count;
    if (plain && e.group === g) return;
    e.group = plain ? g : undefined;
    const dynamic = count ? Array.from(HEAPU32.subarray(offsets >> 2, (offsets >> 2) + count)) : [];
    e.object.setBindGroup(index, g, dynamic);
  },

  wgpuComputePassEncoderDispatchWorkgroups__deps: ['$WebGPU'],
  wgpuComputePassEncoderDispatchWorkgroups__sig: 'vpiii',
  wgpuComputePassEncoderDispatchWorkgroups: (pass, x, y, z) => WebGPU.get(pass).dispatchWorkgroups(x, y, z),

  wgpuComputePassEncoderEnd__deps: ['$WebGPU'],
  wgpuComputePassEncoderEnd__sig: 'vp',
  wgpuComputePassEncoderEnd: (pass) => WebGPU.get(pass).end(),

  wgpuQueueSubmit__deps: ['$WebGPU'],
  wgpuQueueSubmit__sig: 'vppp',
  wgpuQueueSubmit: (queue, count, commands) => {
    const q = WebGPU.get(queue);
    if (WebGPU.commandsQueue !== q) WebGPU.send();
    WebGPU.writes();
    for (let i = 0; i < count; i++) WebGPU.commands.push(WebGPU.get(HEAPU32[(commands >> 2) + i]));
    WebGPU.commandsQueue = q;
  },

  wgpuQueueWriteBuffer__deps: ['$WebGPU'],
  wgpuQueueWriteBuffer__sig: 'vppjpp',
  wgpuQueueWriteBuffer: (queue, buffer, offset, data, size) => {
    const e = WebGPU.entry(buffer);
    if (e.mirror) {
      const at = Number(offset);
      e.mirror.set(HEAPU8.subarray(data, data + size), at);
      e.dirty = e.dirty ? [Math.min(e.dirty[0], at), Math.max(e.dirty[1], at + size)] : [at, at + size];
      WebGPU.dirty.add(e);
      WebGPU.dirtyQueue = WebGPU.get(queue);
      return;
    }
    WebGPU.send();
    // A shared heap (the threaded builds) cannot be handed to writeBuffer directly: copy it out.
    const bytes = HEAPU8.subarray(data, data + size);
    const src = bytes.buffer instanceof ArrayBuffer ? bytes : bytes.slice();
    WebGPU.get(queue).writeBuffer(WebGPU.get(buffer), Number(offset), src);
  },

  wgpuQueueOnSubmittedWorkDone__deps: ['$WebGPU'],
  wgpuQueueOnSubmittedWorkDone__sig: 'jpp',
  wgpuQueueOnSubmittedWorkDone: (queue, info) => {
    WebGPU.flush();
    const cb = WGPU_L.WGPUQueueWorkDoneCallbackInfo.callback;
    return WebGPU.future(WebGPU.get(queue).onSubmittedWorkDone(), (_, err) =>
      err ? WebGPU.call(info, cb, [3], String(err.message ?? err)) : WebGPU.call(info, cb, [1]),
    );
  },

  // A recorded graph's kernels (wasm/patches/0035): per kernel its pipeline, bind group and workgroups x and y.
  hearth_webgpu_replay__deps: ['$WebGPU'],
  hearth_webgpu_replay__sig: 'vppi',
  hearth_webgpu_replay: (pass, calls, count) => {
    const e = WebGPU.entry(pass);
    const p = e.object;
    const objects = WebGPU.objects;
    let pipeline = e.pipeline;
    let group = e.group;
    for (let i = 0, at = calls >> 2; i < count; i++, at += 4) {
      const next = objects[HEAPU32[at]].object;
      if (next !== pipeline) p.setPipeline((pipeline = next));
      const g = objects[HEAPU32[at + 1]].object;
      if (g !== group) p.setBindGroup(0, (group = g));
      p.dispatchWorkgroups(HEAPU32[at + 2], HEAPU32[at + 3], 1);
    }
    e.pipeline = pipeline;
    e.group = group;
    const trace = globalThis.hearthGpuTrace;
    if (trace) trace.replays++;
  },

  // Module.hearthGpuReplay false: every graph encoded afresh (to compare a replay with it).
  hearth_webgpu_replay_allowed__sig: 'i',
  hearth_webgpu_replay_allowed: () => (Module.hearthGpuReplay === false ? 0 : 1),
};

// Reference counting is the same for every object type webgpu.h names.
for (const type of [
  'Adapter',
  'BindGroup',
  'BindGroupLayout',
  'Buffer',
  'CommandBuffer',
  'CommandEncoder',
  'ComputePassEncoder',
  'ComputePipeline',
  'Device',
  'Instance',
  'PipelineLayout',
  'Queue',
  'Sampler',
  'ShaderModule',
  'Surface',
  'TextureView',
]) {
  webgpuLibrary[`wgpu${type}AddRef__deps`] = ['$WebGPU'];
  webgpuLibrary[`wgpu${type}AddRef__sig`] = 'vp';
  webgpuLibrary[`wgpu${type}Release__sig`] = 'vp';
  webgpuLibrary[`wgpu${type}AddRef`] = (h) => WebGPU.addRef(h);
  webgpuLibrary[`wgpu${type}Release__deps`] = ['$WebGPU'];
  webgpuLibrary[`wgpu${type}Release`] = (h) => WebGPU.release(h);
}

// Emscripten's own library_sigs.js declares the old webgpu.h's signatures under the same names: ours replace them.
for (const key of Object.keys(webgpuLibrary)) if (key.endsWith('__sig')) delete LibraryManager.library[key];
addToLibrary(webgpuLibrary);
