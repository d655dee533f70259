// npm run build:wasm — compiles llama.cpp + wasm/hearth.cpp into five WebAssembly builds in public/hearth/:
//   hearth-st.{js,wasm}            single thread, SIMD128: works on any page
//   hearth-mt.{js,wasm}            pthreads + SIMD128: needs SharedArrayBuffer (a cross-origin isolated page)
//   hearth-{st,mt}-relaxed.wasm    the same with relaxed SIMD in ggml-cpu's kernels (an 8-bit dot product), for the
//                                  browsers that validate it (src/backends/llamacpp/worker/simd.ts); they share the plain glue
//   hearth-webgpu.{js,wasm}        single thread with llama.cpp's WebGPU backend beside the CPU's (needs JSPI)
//   hearth-mt64.{js,wasm}          pthreads + SIMD128 with a memory64 heap past 4 GB (a model that does not fit wasm32);
//                                  only with --memory64 or by name
// With Debian trixie's emscripten in a build root of its own (scripts/toolchain.mjs). Incremental: CMake rebuilds
// only what changed, and ccache gives the relaxed builds every object but ggml-cpu's from the plain ones.
// Options (for comparing kernels): [hearth-st|hearth-mt|hearth-st-relaxed|hearth-mt-relaxed|hearth-webgpu|hearth-mt64]
// builds one; --memory64 adds hearth-mt64 to the others;
// --no-patches builds llama.cpp as released, without wasm/patches; --out <dir> writes there instead of public/hearth;
// --profiling keeps the wasm's function names (for a CPU profile: npm run bench -- profile) and builds only the
// single-thread variants, into .cache/profiling unless --out says otherwise; --kernels-bench also links
// wasm/kernels-bench.cpp beside the single-thread builds (npm run bench -- kernels asks for it: no test needs it, and
// its -O3 link is a minute and a half on a 2-core machine); --sanitize address|undefined builds the four CPU builds
// and the kernel test with that sanitizer into .cache/sanitize/<name> (npm run test:sanitize runs the unit tests on
// them).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, llamaSource, patchedSource, root } from '../scripts/llama-source.mjs';
import { webgpuHeaders } from '../scripts/debian-files.mjs';
import { ensurePackages } from '../scripts/system-packages.mjs';
import { ensureToolchain, inToolchain } from '../scripts/toolchain.mjs';
import { countRelaxedDots, countSimdDots, RELAXED_PROBE } from './simd-check.mjs';

/** @typedef {import('../scripts/llama-source.mjs').PatchedSource} PatchedSource */

const args = process.argv.slice(2);
const flagValue = (/** @type {string} */ f) => (args.includes(f) ? args[args.indexOf(f) + 1] : undefined);
const noPatches = args.includes('--no-patches');
const profiling = args.includes('--profiling');
const kernelsBench = args.includes('--kernels-bench');
const memory64 = args.includes('--memory64');
const sanitize = flagValue('--sanitize');
if (sanitize && !['address', 'undefined'].includes(sanitize)) {
  console.error(`[build:wasm] --sanitize takes address or undefined, not ${sanitize}`);
  process.exit(1);
}
const profilingDir = join(cacheDir, 'profiling');
const out = flagValue('--out');
const outDir = out
  ? join(process.cwd(), out)
  : profiling
    ? profilingDir
    : sanitize
      ? join(cacheDir, 'sanitize', sanitize)
      : join(root, 'public', 'hearth');
const only = args.find((a) => a.startsWith('hearth-'));

// The sanitizer builds: what the product builds are, with every C/C++ file instrumented and the sanitizer's runtime
// linked in. A finding stops the module (-fno-sanitize-recover), so the request fails and the test that made it with
// it, after the sanitizer printed where. Function names kept for those reports. 2 GB of memory, not 4: ASan reserves
// an eighth of the maximum for its shadow, and emscripten's arithmetic does not handle 4 GB.
// UBSan's alignment check is left out: a WebAssembly load or store is defined at any address (its alignment is a hint),
// and ggml lays its objects out 4 bytes apart on wasm32 (GGML_MEM_ALIGN 4, a 20-byte object header), so every tensor's
// 64-bit fields are "misaligned" — the first report of every test, hiding the rest. So is its vptr check (the dynamic
// type of a C++ object behind a pointer): each check its cache misses takes a JavaScript stack trace in wasm, and
// libc++'s streams miss on every write — printing a model's vocabulary metadata took 180 s instead of 1.
const sanitizeFlags = sanitize
  ? [
      `-fsanitize=${sanitize}`,
      ...(sanitize === 'undefined' ? ['-fno-sanitize=alignment,vptr'] : []),
      '-fno-sanitize-recover=all',
    ]
  : [];
// The sanitizer's own flags reach every link through HEARTH_SANITIZE_LINK (wasm/CMakeLists.txt); these are the engine's.
const sanitizeLink = sanitize
  ? ['--profiling-funcs', '-sMAXIMUM_MEMORY=2GB', '-sEXIT_RUNTIME=0', '-sSTACK_SIZE=8MB']
  : [];
const wasmDir = join(root, 'wasm');

// Every C/C++ file, llama.cpp's included. -msimd128 everywhere (ggml-cpu adds it only to its own files);
// -fwasm-exceptions because llama.cpp reports load errors by throwing, and with exceptions off a bad GGUF would
// abort the whole module instead of returning an error.
const compileFlags = ['-O3', '-DNDEBUG', '-msimd128', '-fwasm-exceptions'];

const linkFlags = [
  // -O2, not -O3, at the link: it sets binaryen's wasm-opt level only (the code is compiled at -O3 above). wasm-opt -O3
  // took 91 s of a 113 s link here and -O2 21 s; -O2's wasm came out 30 kB smaller, and prefill and decode in Node
  // (the benchmark model, 1 thread, 4 runs each, alternated) were the same within noise: 35.9/29.5 tok/s at -O2,
  // 37.2/29.0 at -O3. Each build links about 70 s sooner.
  '-O2',
  '-msimd128',
  '-fwasm-exceptions',
  '-sMODULARIZE=1',
  '-sEXPORT_NAME=createHearthModule',
  '-sENVIRONMENT=web,worker,node',
  // wasm32: up to 4 GB. Weights live in the heap, so it grows with the model.
  '-sALLOW_MEMORY_GROWTH=1',
  '-sINITIAL_MEMORY=64MB',
  '-sMAXIMUM_MEMORY=4GB',
  // The model file is read through a filesystem mount: WORKERFS over a Blob in the browser, NODEFS in Node.
  '-sFORCE_FILESYSTEM=1',
  '-lworkerfs.js',
  '-lnodefs.js',
  '-sEXPORTED_FUNCTIONS=_malloc,_free',
  // In Node, emscripten would otherwise install process-wide handlers that rethrow any unhandled rejection.
  '-sNODEJS_CATCH_REJECTION=0',
  '-sNODEJS_CATCH_EXIT=0',
  '-sEXPORTED_RUNTIME_METHODS=FS,WORKERFS,NODEFS,UTF8ToString',
  // Emscripten's default stack became 64 kB (3.1.27); llama.cpp keeps large arrays on it while loading a model.
  '-sSTACK_SIZE=5MB',
];

// Relaxed SIMD for ggml-cpu only (its kernels test __wasm_relaxed_simd__); everything else compiles as in the plain
// builds, so ccache serves those objects from them.
const relaxed = { compile: [], link: ['-mrelaxed-simd'], cmake: { HEARTH_RELAXED_SIMD: 'ON' } };

/**
 * @typedef {object} Variant
 * @property {string} name
 * @property {string[]} compile
 * @property {string[]} link
 * @property {Record<string, string>} cmake
 * @property {boolean} [memory64]
 * @property {boolean} [relaxed]
 * @property {boolean} [webgpu]
 */

/** @type {[Variant, Variant, ...Variant[]]} */
const variants = [
  {
    name: 'hearth-st',
    compile: [],
    link: [],
    // ggml asks CMake for Threads with THREADS_PREFER_PTHREAD_FLAG, which under emscripten adds -pthread (shared
    // memory) to its libraries. Emscripten's libc has pthread stubs, so tell FindThreads to use those instead.
    cmake: { CMAKE_HAVE_LIBC_PTHREAD: 'TRUE', THREADS_HAVE_PTHREAD_ARG: 'FALSE' },
  },
  {
    name: 'hearth-mt',
    compile: ['-pthread'],
    // ggml's thread pool starts its threads and then waits for them, so the pthread workers must exist before the
    // first pthread_create (a new one would only start after the caller yields). The pool size comes from the
    // Module object at instantiation (threads - 1); STRICT=2 makes an exhausted pool an error, not a deadlock.
    link: ['-pthread', '-sPTHREAD_POOL_SIZE=Module.hearthPoolSize', '-sPTHREAD_POOL_SIZE_STRICT=2'],
    cmake: {},
  },
];
// The memory64 build (-sMEMORY64): pthreads and SIMD128 as hearth-mt, with a heap past 4 GB, for a model whose
// weights do not fit wasm32's heap and run on the CPU. Fetched only for such a model (wasm32 stays the default:
// memory64's 64-bit addresses cost speed; docs/webgpu.md, "Weights, and models past the heap"). Built only when asked
// (--memory64, or by name): its system libraries are emscripten's wasm64 ones, which Debian does not ship, so the
// first build makes them (memory64Env).
/** @type {Variant} */
const MEMORY64 = {
  name: 'hearth-mt64',
  memory64: true,
  compile: ['-pthread', '-sMEMORY64'],
  link: [
    ...variants[1].link,
    '-sMEMORY64',
    // Chromium's and Firefox's limit for a memory64 heap.
    '-sMAXIMUM_MEMORY=16GB',
    `-sSIGNATURE_CONVERSIONS=${signatureConversions().join(',')}`,
  ],
  cmake: {},
};
variants.push(MEMORY64);
for (const plain of variants.filter((v) => !v.memory64)) {
  variants.push({
    ...plain,
    name: `${plain.name}-relaxed`,
    relaxed: true,
    link: [...plain.link, ...relaxed.link],
    cmake: { ...plain.cmake, ...relaxed.cmake },
  });
}

// The GPU build: llama.cpp's WebGPU backend (ggml-webgpu) beside ggml-cpu, over wasm/webgpu/library_webgpu.js. It waits
// for the GPU with JSPI (WebAssembly.Suspending/promising): the exports that can reach a wait return promises. Single
// thread: what stays on the CPU runs there (threads and JSPI together are not supported by this emscripten). Built
// after hearth-st, whose objects ccache hands it (wasm/CMakeLists.txt keeps GGML_USE_WEBGPU to ggml's registry).
const JSPI_EXPORTS = [
  'hearth_init', // llama_backend_init makes ggml's backend registry, and ggml-webgpu asks for the adapter there
  'hearth_model_load',
  'hearth_context_new',
  'hearth_decode',
  'hearth_state_seq_get',
  'hearth_state_seq_set',
  'hearth_memory_clear',
  'hearth_mtmd_init',
  'hearth_media_encode',
  'hearth_media_decode',
];
variants.push({
  name: 'hearth-webgpu',
  webgpu: true,
  compile: [],
  link: ['-sJSPI', '-sWASM_BIGINT', `-sJSPI_EXPORTS=${JSPI_EXPORTS.join(',')}`],
  cmake: {
    ...variants[0].cmake,
    GGML_WEBGPU: 'ON',
    GGML_WEBGPU_JSPI: 'ON',
    EMDAWNWEBGPU_DIR: join(wasmDir, 'webgpu'),
  },
});

/**
 * The struct layouts of the webgpu.h at `include` as a JS library (WGPU_LAYOUT) for wasm/webgpu/library_webgpu.js:
 * wasm/webgpu/layout.cpp compiled with that header and run.
 * @param {string} include
 * @param {string} buildDir
 */
function webgpuLayout(include, buildDir) {
  mkdirSync(buildDir, { recursive: true });
  const program = join(buildDir, 'webgpu-layout.cjs');
  run('em++', [
    '-std=c++17',
    `-I${include}`,
    '-sENVIRONMENT=node',
    '-o',
    program,
    join(wasmDir, 'webgpu', 'layout.cpp'),
  ]);
  /** @type {[struct: string, field: string, offset: number, size: number][]} */
  const fields = JSON.parse(execFileSync(process.execPath, [program], { encoding: 'utf8' }));
  /** @type {Record<string, Record<string, number>>} */
  const structs = {};
  /** @type {[field: string, offset: number, size: number][]} */
  const limits = [];
  for (const [struct, field, offset, size] of fields) {
    (structs[struct] ??= {})[field] = offset;
    if (struct === 'WGPULimits') limits.push([field, offset, size]);
  }
  const layout = { $limits: limits, ...structs };
  const file = join(buildDir, 'webgpu-layout.js');
  const text = `// Made by wasm/build.mjs from wasm/webgpu/layout.cpp.\nvar WGPU_LAYOUT = ${JSON.stringify(layout)};\n`;
  // Written only when it changes: it is a link dependency, and a new mtime would relink an up-to-date build.
  if (!existsSync(file) || readFileSync(file, 'utf8') !== text) writeFileSync(file, text);
  return file;
}

/**
 * In a memory64 build a pointer (or size_t) crosses into JS as a BigInt; emscripten converts those of the exports it
 * is told about (-sSIGNATURE_CONVERSIONS) to Numbers, so the binding is the same for both builds. Read from
 * hearth.cpp's exports: `p` for a pointer or size_t, `_` for anything else, the return first.
 */
function signatureConversions() {
  const source = readFileSync(join(wasmDir, 'hearth.cpp'), 'utf8');
  const kind = (/** @type {string} */ type) => (/\*|\bsize_t\b/.test(type) ? 'p' : '_');
  const sigs = [];
  for (const match of source.matchAll(/EMSCRIPTEN_KEEPALIVE\s+([^(]*?)\b(hearth_\w+)\s*\(([^)]*)\)/g)) {
    // Every group takes part in a match.
    const [, ret, name, params] = /** @type {RegExpExecArray & [string, string, string, string]} */ (match);
    const args = params.trim() === '' || params.trim() === 'void' ? [] : params.split(',');
    const sig = `${kind(ret)}${args.map(kind).join('')}`;
    if (sig.includes('p')) sigs.push(`${name}:${sig}`); // emscripten refuses a signature with nothing to convert
  }
  if (sigs.length < 50)
    throw new Error(`found ${sigs.length} exports in hearth.cpp: the signature reader is out of date`);
  return sigs;
}

/**
 * Emscripten 3.1.69's glue names a memory64 heap's address type `index` (the proposal's first name) and probes for
 * BigInt bounds with it; the browsers and Node now read `address` and ignore `index`, so the probe fails, the glue
 * passes Numbers, and growing the heap throws ("Cannot convert 83 to a BigInt"). Renamed in the glue it writes.
 * @param {string} file
 */
function fixMemory64Glue(file) {
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(/(["']?)index\1(\s*:\s*)(["'])i64\3/g, '$1address$1$2$3i64$3');
  if (!/(["']?)address\1\s*:\s*(["'])i64\2/.test(fixed)) {
    throw new Error(`${file} names no memory64 address type: the memory64 glue fix is out of date`);
  }
  if (fixed !== text) writeFileSync(file, fixed);
}

function emscriptenRoot() {
  // em-config prints the EMSCRIPTEN_ROOT from emscripten's config (Debian: /usr/share/emscripten).
  return inToolchain('em-config', ['EMSCRIPTEN_ROOT'], { encoding: 'utf8', env: emEnv() }).trim();
}

// Emscripten runs its JS optimizer with Node and needs the acorn package, which we install with npm; ccache keeps
// its objects in .cache (inside the repository, which the build root sees).
/** @param {Variant} [variant] */
function emEnv(variant) {
  const nodePath = [join(root, 'node_modules'), process.env.NODE_PATH].filter(Boolean).join(':');
  return {
    ...process.env,
    NODE_PATH: nodePath,
    CCACHE_DIR: join(cacheDir, 'ccache'),
    CCACHE_MAXSIZE: '2G',
    ...(variant?.memory64 ? memory64Env() : {}),
  };
}

/**
 * Debian's emscripten ships its system libraries (libc, libc++, malloc…) prebuilt for wasm32 only, in a cache it
 * keeps read-only (FROZEN_CACHE). A memory64 build gets a writable cache of its own, where emcc builds the wasm64
 * ones the first time (about 4 minutes on 2 cores) and its headers.
 */
function memory64Env() {
  const dir = join(cacheDir, 'em-cache64');
  mkdirSync(dir, { recursive: true });
  return { EM_CACHE: dir, EM_FROZEN_CACHE: '0' };
}

// --out may name a folder outside the repository; the build root sees it at its own path.
const binds = outDir.startsWith(`${root}/`) ? [] : [outDir];

/**
 * @param {string} cmd
 * @param {string[]} args
 * @param {Variant} [variant]
 */
function run(cmd, args, variant) {
  inToolchain(cmd, args, { stdio: 'inherit', env: emEnv(variant), binds });
}

/**
 * @param {Variant} variant
 * @param {PatchedSource} source
 * @param {string} emRoot
 */
function buildVariant(variant, source, emRoot) {
  const buildDir = join(
    cacheDir,
    'wasm-build',
    variant.name + (noPatches ? '-unpatched' : '') + (profiling ? '-profiling' : '') + (sanitize ? `-${sanitize}` : ''),
  );
  // Module.hearthEndThreads: a dropped module's pthread workers ended (wasm/post.js).
  const postJs = join(wasmDir, 'post.js');
  let link = [...variant.link, `--post-js=${postJs}`];
  let linkInputs = [postJs];
  if (variant.webgpu) {
    const include = webgpuHeaders();
    process.env.HEARTH_WEBGPU_INCLUDE = include;
    const libraries = [webgpuLayout(include, buildDir), join(wasmDir, 'webgpu', 'library_webgpu.js')];
    link = [...link, ...libraries.map((f) => `--js-library=${f}`)];
    linkInputs = [...linkInputs, ...libraries];
  }
  const cacheArgs = {
    CMAKE_BUILD_TYPE: 'Release',
    CMAKE_TOOLCHAIN_FILE: join(wasmDir, 'toolchain.cmake'),
    HEARTH_EMSCRIPTEN_ROOT: emRoot,
    LLAMA_CPP_DIR: source.dir,
    HEARTH_OUTPUT_NAME: variant.name,
    HEARTH_OUTPUT_DIR: outDir,
    HEARTH_COMPILE_FLAGS: [...compileFlags, ...variant.compile, ...sanitizeFlags].join(' '),
    HEARTH_LINK_FLAGS: [...linkFlags, ...link, ...(profiling ? ['--profiling-funcs'] : []), ...sanitizeLink].join(' '),
    // Every executable links the sanitizer's runtime: the engine and the kernel test, built from the same objects.
    HEARTH_SANITIZE_LINK: sanitizeFlags.join(' '),
    // A JS library's or the post-js's edit relinks (CMake does not see files named in link flags).
    HEARTH_LINK_DEPENDS: linkInputs.join(';'),
    HEARTH_LLAMA_BUILD: llamaBuild(source),
    HEARTH_RELAXED_SIMD: 'OFF',
    CMAKE_C_COMPILER_LAUNCHER: 'ccache',
    CMAKE_CXX_COMPILER_LAUNCHER: 'ccache',
    // The kernel test exercises our patches, so it exists only for the patched single-thread builds.
    HEARTH_KERNELS_TEST: source.patches && !profiling && variant.name.startsWith('hearth-st') ? 'ON' : 'OFF',
    ...variant.cmake,
  };
  // Reconfigure only when the inputs change; CMake then rebuilds just what they touch.
  const stamp = createHash('sha256').update(JSON.stringify(cacheArgs)).digest('hex');
  const stampFile = join(buildDir, 'hearth-configure.stamp');
  if (!existsSync(stampFile) || readFileSync(stampFile, 'utf8') !== stamp) {
    mkdirSync(buildDir, { recursive: true });
    const defs = Object.entries(cacheArgs).map(([k, v]) => `-D${k}=${v}`);
    const out = inToolchain('cmake', ['-S', wasmDir, '-B', buildDir, '-G', 'Unix Makefiles', ...defs], {
      encoding: 'utf8',
      env: emEnv(variant),
      stdio: ['ignore', 'pipe', 'inherit'],
      binds,
    });
    process.stdout.write(out);
    if (!out.includes('Wasm detected')) {
      throw new Error(
        'ggml-cpu did not detect the wasm architecture: it would build its slow generic kernels. ' +
          'Check wasm/toolchain.cmake (CMAKE_SYSTEM_PROCESSOR must be wasm32).',
      );
    }
    writeFileSync(stampFile, stamp);
  }
  const jobs = String(Math.max(1, Number(process.env.HEARTH_BUILD_JOBS) || cpuCount()));
  const kernels =
    cacheArgs.HEARTH_KERNELS_TEST === 'ON' ? ['kernels-test', ...(kernelsBench ? ['kernels-bench'] : [])] : [];
  const targets = ['hearth', ...kernels];
  for (const target of targets) run('cmake', ['--build', buildDir, '--target', target, '--', `-j${jobs}`], variant);
  if (variant.memory64) fixMemory64Glue(join(outDir, `${variant.name}.js`));
  // The unit tests find the kernel test beside the builds they run (test/kernels.test.ts).
  if (sanitize && kernels.length && !variant.relaxed)
    copyFileSync(join(buildDir, 'kernels-test.cjs'), join(outDir, 'kernels-test.cjs'));
}

/**
 * A relaxed build's glue is its plain twin's but for the wasm file's name: the loader starts the plain glue and hands
 * it the relaxed wasm (locateFile), so one glue per thread mode ships. Checked here, so a difference cannot slip by.
 * @param {Variant} variant
 */
function dropGlue(variant) {
  const plainName = variant.name.replace(/-relaxed$/, '');
  const glue = join(outDir, `${variant.name}.js`);
  const plain = join(outDir, `${plainName}.js`);
  if (!existsSync(plain)) throw new Error(`${plainName}.js is missing: build ${plainName} before ${variant.name}`);
  if (readFileSync(glue, 'utf8').replaceAll(variant.name, plainName) !== readFileSync(plain, 'utf8')) {
    throw new Error(
      `${variant.name}.js differs from ${plainName}.js by more than the wasm's name: the loader could not share the glue`,
    );
  }
  rmSync(glue);
}

function cpuCount() {
  return Math.max(1, Number(execFileSync('nproc', { encoding: 'utf8' }).trim()) || 1);
}

// What hearth_llama_build() reports (what KV cache records and prompt state files are keyed by): release, commit,
// our patches.
/** @param {PatchedSource} source */
function llamaBuild(source) {
  const base = `${source.tag}+${source.commit.slice(0, 12)}`;
  return source.patchHash ? `${base}-${source.patchHash}` : base;
}

function main() {
  ensurePackages('build');
  ensureToolchain();
  /** @type {PatchedSource} */
  const source = noPatches ? llamaSource() : patchedSource(llamaSource());
  const emRoot = emscriptenRoot();
  mkdirSync(outDir, { recursive: true });
  for (const variant of variants) {
    if (only && variant.name !== only) continue;
    if (profiling && !variant.name.startsWith('hearth-st')) continue;
    if (variant.memory64 && !(memory64 || only)) continue;
    if (sanitize && variant.webgpu) continue; // the sanitizers check the C/C++ code, which the CPU builds all have
    const t0 = Date.now();
    buildVariant(variant, source, emRoot);
    const wasm = readFileSync(join(outDir, `${variant.name}.wasm`));
    const dots = countSimdDots(wasm);
    const relaxedDots = countRelaxedDots(wasm);
    // The wasm SIMD kernels of ggml-cpu use i32x4.dot_i16x8_s; the generic fallback has none. Where this Node has
    // relaxed SIMD off (Node 20 without its flag), a plain build must validate (a browser without relaxed SIMD would
    // refuse it otherwise), and a relaxed one must not (else its kernels are missing): byte counts alone can be fooled
    // by data that looks alike.
    if (dots < 8) {
      throw new Error(
        `${variant.name}.wasm has ${dots} i32x4.dot_i16x8_s instructions: ggml's wasm SIMD kernels are missing`,
      );
    }
    // (Not the memory64 build: this Node validates no memory64 module, relaxed or not; it has no relaxed twin.)
    if (!variant.memory64 && !WebAssembly.validate(RELAXED_PROBE) && WebAssembly.validate(wasm) === !!variant.relaxed) {
      throw new Error(
        variant.relaxed
          ? `${variant.name}.wasm validates without relaxed SIMD: its relaxed kernels are missing`
          : `${variant.name}.wasm uses relaxed SIMD: a browser without it would refuse it`,
      );
    }
    console.log(
      `[build:wasm] ${variant.name}: ${(wasm.length / 1e6).toFixed(1)} MB, ${dots} SIMD dot + ${relaxedDots} relaxed dot instructions, ${((Date.now() - t0) / 1000).toFixed(0)} s`,
    );
    if (variant.relaxed) dropGlue(variant);
  }
  // The emscripten glue is CommonJS-style (module.exports) and this package is "type": "module": tell Node.
  writeFileSync(join(outDir, 'package.json'), '{ "type": "commonjs" }\n');
  writeFileSync(
    join(outDir, 'build-info.json'),
    `${JSON.stringify(
      {
        llama: llamaBuild(source),
        patches: source.patches ?? [],
        compileFlags,
        linkFlags,
      },
      null,
      2,
    )}\n`,
  );
}

try {
  main();
} catch (err) {
  console.error(`[build:wasm] failed: ${/** @type {Error} */ (err).message.split('\n')[0]}`);
  process.exit(1);
}
