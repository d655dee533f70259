// npm run build:server — llama.cpp's own `llama-server`, built natively from the pinned source
// (scripts/llama-source.mjs) into .cache/native-server/llama-server: the real OpenAI-compatible server the remote
// backend's e2e test talks to (test/fixtures/llama-server.ts starts it). With the host's cmake and g++, not the wasm
// build root: this is a plain Linux binary. Unpatched source: wasm/patches are wasm kernels (and a grammar speed-up)
// the server does not need. Only the llama-server target, CPU only, no network features, so a clean CI run spends
// minutes here, not tens.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { cacheDir, llamaSource, root } from './llama-source.mjs';
import { ensurePackages } from './system-packages.mjs';

export const serverDir = join(cacheDir, 'native-server');
export const serverBinary = join(serverDir, 'llama-server');
/** test/native/mtmd-probe.cpp linked with the same build's libraries: libmtmd's native results for the media tests. */
export const probeBinary = join(serverDir, 'mtmd-probe');

/** What every native build of llama.cpp here shares (the server's, and build-native-vulkan.mjs's llama-bench). */
export const nativeCmakeArgs = {
  CMAKE_BUILD_TYPE: 'Release',
  // One self-contained executable (llama.cpp defaults to shared libraries): it can be copied out of the build tree.
  BUILD_SHARED_LIBS: 'OFF',
  // Nothing that would reach the internet or need more system packages: no model downloads over HTTPS (LLAMA_CURL is
  // the older name of that switch, deprecated at this commit, and OpenSSL the newer), no web UI (it would be fetched
  // from a Hugging Face bucket, or built with npm; CMake's "UI: no assets available" warning is expected). GPU backends
  // are off by default; the CPU backend is on, tuned for this machine (GGML_NATIVE's default).
  LLAMA_CURL: 'OFF',
  LLAMA_OPENSSL: 'OFF',
  LLAMA_BUILD_UI: 'OFF',
  LLAMA_USE_PREBUILT_UI: 'OFF',
  // Configure only what llama-server needs (it lives under tools/).
  LLAMA_BUILD_TESTS: 'OFF',
  LLAMA_BUILD_EXAMPLES: 'OFF',
  LLAMA_BUILD_APP: 'OFF',
  LLAMA_BUILD_TOOLS: 'ON',
};
// -O1: the server answers the tests' tiny models, where its speed plays no part, and its build runs beside the wasm
// builds in a clean CI run; -O3 compiled for longer (most of it llama-server's JSON templates and ggml's kernels) to
// no purpose. No flag that changes what a float operation computes (nothing like -ffast-math): the media tests compare
// libmtmd's results with the wasm engine's.
const cmakeArgs = {
  ...nativeCmakeArgs,
  LLAMA_BUILD_SERVER: 'ON',
  CMAKE_C_FLAGS_RELEASE: '-O1 -DNDEBUG',
  CMAKE_CXX_FLAGS_RELEASE: '-O1 -DNDEBUG',
};

function main() {
  const source = llamaSource();
  const stampFile = join(serverDir, 'llama-server.stamp');
  const stamp = JSON.stringify({ commit: source.commit, cmakeArgs });
  if (existsSync(serverBinary) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) {
    console.log(`[build:server] ${serverBinary} (llama.cpp ${source.tag}+${source.commit.slice(0, 12)}, up to date)`);
    buildProbe(source, join(serverDir, 'build'));
    return;
  }
  ensurePackages('server');
  const t0 = Date.now();
  const buildDir = join(serverDir, 'build');
  cmakeBuild({ source, buildDir, defs: cmakeArgs, target: 'llama-server', ccacheDir: join(cacheDir, 'ccache-native') });
  // Copy, then rename: a half-written binary is never taken for a finished one.
  copyFileSync(join(buildDir, 'bin', 'llama-server'), `${serverBinary}.partial`);
  renameSync(`${serverBinary}.partial`, serverBinary);
  writeFileSync(stampFile, stamp);
  buildProbe(source, buildDir);
  console.log(
    `[build:server] ${serverBinary} (llama.cpp ${source.tag}+${source.commit.slice(0, 12)}, built in ${((Date.now() - t0) / 1000).toFixed(0)} s)`,
  );
}

/**
 * Configures llama.cpp's `source` in `buildDir` with `defs` and builds `target` with the host's cmake and g++ (every
 * core, or HEARTH_BUILD_JOBS), through ccache where the machine has it (a fresh CI clone has an empty cache, so it is
 * used when present, not installed). `env`: more environment for both steps.
 * @param {{ source: { dir: string }, buildDir: string, defs: Record<string, string>, target: string,
 *   ccacheDir: string, env?: Record<string, string> }} o
 */
export function cmakeBuild({ source, buildDir, defs, target, ccacheDir, env: more = {} }) {
  const all = { ...defs };
  if (spawnSync('sh', ['-c', 'command -v ccache'], { stdio: 'ignore' }).status === 0) {
    all.CMAKE_C_COMPILER_LAUNCHER = all.CMAKE_CXX_COMPILER_LAUNCHER = 'ccache';
  }
  const env = { ...process.env, CCACHE_DIR: ccacheDir, ...more };
  // A build tree belongs to one source folder (CMake refuses another): a new commit starts a fresh one.
  const cache = join(buildDir, 'CMakeCache.txt');
  if (existsSync(cache) && !readFileSync(cache, 'utf8').includes(`CMAKE_HOME_DIRECTORY:INTERNAL=${source.dir}\n`)) {
    rmSync(buildDir, { recursive: true, force: true });
  }
  mkdirSync(buildDir, { recursive: true });
  execFileSync(
    'cmake',
    [
      '-S',
      source.dir,
      '-B',
      buildDir,
      '-G',
      'Unix Makefiles',
      '-Wno-dev',
      ...Object.entries(all).map(([k, v]) => `-D${k}=${v}`),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'], env },
  );
  const jobs = String(Number(process.env.HEARTH_BUILD_JOBS) || availableParallelism());
  execFileSync('cmake', ['--build', buildDir, '--target', target, '--', `-j${jobs}`], { stdio: 'inherit', env });
}

/**
 * The probe, against the static libraries the llama-server build left (libmtmd is one of them); rebuilt when older.
 * @param {{ dir: string }} source
 * @param {string} buildDir
 */
function buildProbe(source, buildDir) {
  const src = join(root, 'test', 'native', 'mtmd-probe.cpp');
  if (
    existsSync(probeBinary) &&
    statSync(probeBinary).mtimeMs > Math.max(statSync(src).mtimeMs, statSync(serverBinary).mtimeMs)
  ) {
    return;
  }
  const libs = [
    'tools/mtmd/libmtmd.a',
    'src/libllama.a',
    'ggml/src/libggml.a',
    'ggml/src/libggml-cpu.a',
    'ggml/src/libggml-base.a',
    'vendor/hash/libvendor-hash.a',
  ].map((l) => join(buildDir, l));
  const include = ['include', 'ggml/include', 'tools/mtmd'].map((d) => `-I${join(source.dir, d)}`);
  execFileSync(
    'g++',
    ['-O2', '-std=c++17', ...include, src, ...libs, '-fopenmp', '-lpthread', '-o', `${probeBinary}.partial`],
    { stdio: 'inherit' },
  );
  renameSync(`${probeBinary}.partial`, probeBinary);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main();
  } catch (err) {
    console.error(`[build:server] failed: ${/** @type {Error} */ (err).message.split('\n')[0]}`);
    process.exit(1);
  }
}
