// The llama.cpp source Hearth builds from: the git bundle inside node-llama-cpp (pinned in tools/llama/package.json,
// installed by `npm ci`'s prepare step), cloned once into .cache/. Also the home of the real tokenizers
// (models/ggml-vocab-*.gguf) and chat templates the test models use.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const cacheDir = join(root, '.cache');

export const toolsDir = join(root, 'tools', 'llama');
const packageDir = join(toolsDir, 'node_modules', 'node-llama-cpp', 'llama');

/** @returns {{ dir: string, commit: string, tag: string }} */
export function llamaSource() {
  const bundle = join(packageDir, 'gitRelease.bundle');
  if (!existsSync(bundle)) {
    throw new Error(`llama.cpp source bundle not found at ${bundle}. Run "npm ci" (its prepare step installs tools/llama).`);
  }
  const heads = execFileSync('git', ['bundle', 'list-heads', bundle], { encoding: 'utf8' });
  const commit = heads.trim().split(/\s+/)[0];
  const tag = JSON.parse(readFileSync(join(packageDir, 'llama.cpp.info.json'), 'utf8')).tag;
  const dir = join(cacheDir, `llama.cpp-${commit.slice(0, 12)}`);
  if (!existsSync(join(dir, 'include', 'llama.h'))) {
    // Clone beside the target and rename, so an interrupted clone never looks like a finished one.
    mkdirSync(cacheDir, { recursive: true });
    const tmp = `${dir}.partial`;
    rmSync(tmp, { recursive: true, force: true });
    execFileSync('git', ['-c', 'advice.detachedHead=false', 'clone', '--quiet', bundle, tmp], { stdio: 'inherit' });
    execFileSync('git', ['-C', tmp, '-c', 'advice.detachedHead=false', 'checkout', '--quiet', commit], { stdio: 'inherit' });
    renameSync(tmp, dir);
  }
  return { dir, commit, tag };
}
