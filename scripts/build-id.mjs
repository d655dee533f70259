// The build's identity: a hash of the package version and every source file. Builds put it in the code
// (__HEARTH_BUILD__): tabs that share an engine talk only to tabs of the same build (src/api/shared/wire.ts), and the
// service worker's cache changes with it.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { root } from './llama-source.mjs';

export function buildId() {
  const hash = createHash('sha256').update(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
  for (const file of filesUnder(join(root, 'src'))) hash.update(relative(root, file)).update(readFileSync(file));
  return hash.digest('hex').slice(0, 12);
}

/** Every file under `dir` (recursively), as paths, in name order.
 * @param {string} dir
 * @returns {string[]} */
export function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((d) => (d.isDirectory() ? filesUnder(join(dir, d.name)) : [join(dir, d.name)]));
}

/** Vite's `define` for it. */
export const buildDefine = () => ({
  __HEARTH_BUILD__: JSON.stringify(buildId()),
  __HEARTH_VERSION__: JSON.stringify(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version),
});
