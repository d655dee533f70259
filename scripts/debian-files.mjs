// Files from Debian packages that Hearth builds or tests with but does not install on the host: downloaded with
// apt-get into a private apt state (the host's sources, lists and installed set stay as they are) and unpacked with
// dpkg-deb -x into .cache/debian/<name>/. Used for:
//   - webgpu.h from sid's libwebgpu-dawn-dev: the header llama.cpp's WebGPU backend compiles against (no other
//     Debian or npm package ships the current one). sid moves: the current version is taken, and what Hearth needs
//     of it (the struct fields in wasm/webgpu/layout.cpp, the functions in wasm/webgpu/library_webgpu.js) is
//     checked at every build;
//   - Mesa's lavapipe (a Vulkan driver on the CPU) from bookworm-backports: bookworm's Mesa 22 is too old for Dawn,
//     which runs the GPU engine's tests in Node (test/webgpu/).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from './llama-source.mjs';
import { debianMirror } from './toolchain.mjs';

/**
 * Unpacks `packages` from Debian's `suites` into .cache/debian/<name> (once; again when the list changes) and returns
 * that folder. A package may name its suite (mesa-vulkan-drivers/bookworm-backports). Its own dependencies are not
 * fetched: name every one needed.
 * @param {string} name
 * @param {string[]} suites
 * @param {string[]} packages
 * @returns {string}
 */
export function debianFiles(name, suites, packages) {
  const dir = join(cacheDir, 'debian', name);
  const stampFile = join(dir, '.hearth-packages');
  const stamp = `${suites.join(' ')}: ${packages.join(' ')}\n`;
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return dir;
  const work = `${dir}.partial`;
  rmSync(work, { recursive: true, force: true });
  const state = join(work, '.apt');
  for (const d of ['lists/partial', 'archives/partial', 'debs']) mkdirSync(join(state, d), { recursive: true });
  writeFileSync(join(state, 'sources.list'), suites.map((suite) => `deb ${debianMirror()} ${suite} main\n`).join(''));
  const apt = [
    '-o',
    `Dir::Etc::SourceList=${join(state, 'sources.list')}`,
    '-o',
    'Dir::Etc::SourceParts=/dev/null',
    '-o',
    `Dir::State::Lists=${join(state, 'lists')}`,
    '-o',
    `Dir::Cache::Archives=${join(state, 'archives')}`,
    '-o',
    'Dir::State::Status=/dev/null',
    '-o',
    'APT::Architecture=amd64',
    '-o',
    'APT::Architectures=amd64',
    '-o',
    'APT::Sandbox::User=root',
  ]; // prettier-ignore
  console.log(`[debian-files] ${name}: ${packages.join(', ')} (${suites.join(', ')})…`);
  execFileSync('apt-get', [...apt, '-qq', 'update'], { stdio: 'inherit' });
  execFileSync('apt-get', [...apt, '-qq', 'download', ...packages], { stdio: 'inherit', cwd: join(state, 'debs') });
  for (const deb of readdirSync(join(state, 'debs'))) {
    execFileSync('dpkg-deb', ['-x', join(state, 'debs', deb), work]);
  }
  rmSync(state, { recursive: true, force: true });
  writeFileSync(join(work, '.hearth-packages'), stamp);
  rmSync(dir, { recursive: true, force: true });
  renameSync(work, dir);
  return dir;
}

/**
 * The include folder with webgpu/webgpu.h (sid's libwebgpu-dawn-dev). Its headers refuse to be used under emscripten
 * ("use the headers provided by Emdawnwebgpu"): that line is dropped, since Hearth provides the implementation.
 */
export function webgpuHeaders() {
  const include = join(debianFiles('webgpu-headers', ['sid'], ['libwebgpu-dawn-dev']), 'usr', 'include');
  for (const file of ['dawn/webgpu.h', 'dawn/webgpu_cpp.h', 'webgpu/webgpu_cpp_chained_struct.h']) {
    const path = join(include, file);
    const text = readFileSync(path, 'utf8');
    const kept = text.replace(/^#\s*error\s+"Do not include this header\..*$/m, '');
    if (kept !== text) writeFileSync(path, kept);
  }
  if (!existsSync(join(include, 'webgpu', 'webgpu.h'))) throw new Error(`no webgpu/webgpu.h in ${include}`);
  return include;
}
