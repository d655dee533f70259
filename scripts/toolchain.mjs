// The toolchain Hearth's wasm is built with: Debian trixie's emscripten 3.1.69 (LLVM 19, binaryen 120), in a build
// root of its own (.cache/toolchain/trixie) made once with mmdebstrap and entered with bubblewrap. The host's packages
// stay as they are. Why not the host's emscripten: bookworm's 3.1.6 (LLVM 14) cannot emit relaxed SIMD, and its
// binaryen 108 silently breaks a module that contains it (it reads the relaxed dot product as a two-operand
// instruction). The root takes about 2.5 GB and 1–2 minutes to make.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cacheDir, root } from './llama-source.mjs';

const SUITE = 'trixie';
// git: llama.cpp's CMake asks it for the build number; ccache: the plain and relaxed builds share every object
// except ggml-cpu's.
const PACKAGES = ['emscripten', 'binaryen', 'cmake', 'make', 'python3', 'git', 'ccache'];
export const toolchainDir = join(cacheDir, 'toolchain', SUITE);
const stampFile = join(toolchainDir, '.hearth-packages');
const stamp = `${SUITE}: ${PACKAGES.join(' ')}\n`;

/** Makes the build root when it is missing or was made with another package list. */
export function ensureToolchain() {
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return;
  const tmp = `${toolchainDir}.partial`;
  // mmdebstrap mounts /proc, /sys and /dev inside the root while it works; an interrupted run may leave them, and
  // removing the folder would then walk into the host's.
  const mounted = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(`${tmp}/`) || m.startsWith(`${toolchainDir}/`));
  if (mounted.length) {
    throw new Error(`unmount these first (an interrupted mmdebstrap left them): ${mounted.join(' ')}`);
  }
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(dirname(tmp), { recursive: true }); // mmdebstrap wants the target's parent to exist
  console.log(`[toolchain] making a Debian ${SUITE} build root with ${PACKAGES.join(', ')} (mmdebstrap, once)…`);
  // --variant=apt: only what apt needs plus the packages; no recommends (documentation, test suites).
  execFileSync(
    'mmdebstrap',
    [
      '--quiet',
      '--variant=apt',
      `--include=${PACKAGES.join(',')}`,
      '--aptopt=APT::Install-Recommends "false"',
      SUITE,
      tmp,
      debianMirror(),
    ],
    { stdio: 'inherit' },
  );
  writeFileSync(join(tmp, '.hearth-packages'), stamp);
  rmSync(toolchainDir, { recursive: true, force: true });
  renameSync(tmp, toolchainDir);
}

/** The Debian mirror the host's apt uses (a machine may have its own), else deb.debian.org. */
export function debianMirror() {
  for (const file of ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list']) {
    if (!existsSync(file)) continue;
    const m =
      /^URIs:\s*(\S+\/debian)\/?\s*$/m.exec(readFileSync(file, 'utf8')) ??
      /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\/?\s/m.exec(readFileSync(file, 'utf8'));
    if (m) return /** @type {string} */ (m[1]); // the group takes part in every match
  }
  return 'http://deb.debian.org/debian';
}

/**
 * @typedef {object} ToolchainOptions
 * @property {BufferEncoding} [encoding]
 * @property {import('node:child_process').StdioOptions} [stdio]
 * @property {NodeJS.ProcessEnv} [env]
 * @property {string[]} [binds]
 * @property {string} [cwd]
 */

/**
 * @overload
 * @param {string} cmd
 * @param {string[]} args
 * @param {ToolchainOptions & { encoding: BufferEncoding }} opts
 * @returns {string}
 */
/**
 * @overload
 * @param {string} cmd
 * @param {string[]} args
 * @param {ToolchainOptions} [opts]
 * @returns {string | Buffer}
 */
/**
 * Runs `cmd` inside the build root, with this repository at the same path (so paths in CMake caches and compiler
 * output mean the same inside and out). bubblewrap's mounts exist only for that process: nothing is left mounted
 * inside .cache for a later `rm -rf` to walk into. `opts.binds`: more folders to show at their own paths.
 * @param {string} cmd
 * @param {string[]} args
 * @param {ToolchainOptions} [opts]
 * @returns {string | Buffer}
 */
export function inToolchain(cmd, args, opts = {}) {
  return execFileSync('bwrap', toolchainArgs(cmd, args, opts), {
    encoding: opts.encoding,
    stdio: opts.stdio,
    env: { ...process.env, ...opts.env },
  });
}

/**
 * bubblewrap's arguments that run `cmd` inside the build root as inToolchain does (opts.binds, opts.cwd).
 * @param {string} cmd
 * @param {string[]} args
 * @param {ToolchainOptions} [opts]
 * @returns {string[]}
 */
export function toolchainArgs(cmd, args, opts = {}) {
  return [
    '--bind',
    toolchainDir,
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--ro-bind',
    '/etc/resolv.conf',
    '/etc/resolv.conf',
    '--ro-bind-try',
    '/etc/ssl/certs',
    '/etc/ssl/certs',
    '--bind',
    root,
    root,
    ...(opts.binds ?? []).flatMap((dir) => ['--bind', dir, dir]),
    '--chdir',
    opts.cwd ?? root,
    '--setenv',
    'HOME',
    '/root',
    // The repository belongs to whoever cloned it; git inside refuses "dubious ownership" otherwise.
    '--setenv',
    'GIT_CONFIG_COUNT',
    '1',
    '--setenv',
    'GIT_CONFIG_KEY_0',
    'safe.directory',
    '--setenv',
    'GIT_CONFIG_VALUE_0',
    '*',
    cmd,
    ...args,
  ];
}
