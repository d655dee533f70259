// The llama.cpp source Hearth builds from: the git bundle inside node-llama-cpp (pinned in tools/llama/package.json,
// installed by `npm ci`'s prepare step), cloned once into .cache/, and that source with Hearth's patches applied
// (wasm/patches: a `git format-patch` series onto the commit wasm/patches/BASE names). Also the home of the real
// tokenizers (models/ggml-vocab-*.gguf) and chat templates the test models use.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const cacheDir = join(root, '.cache');

export const toolsDir = join(root, 'tools', 'llama');
const packageDir = join(toolsDir, 'node_modules', 'node-llama-cpp', 'llama');

/** @typedef {{ dir: string, commit: string, tag: string }} LlamaSource */
/** @typedef {LlamaSource & { patches?: string[], patchHash?: string }} PatchedSource */
/** @typedef {{ commit: string, tree: string, tag: string }} PatchBase */

/** Hearth's patches to llama.cpp: a series made by `git format-patch` (wasm/patches/README.md). */
export const patchDir = join(root, 'wasm', 'patches');

/**
 * The series' files, in order.
 * @param {string} [dir]
 * @returns {string[]}
 */
export function patchFiles(dir = patchDir) {
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.patch'))
        .sort()
    : [];
}

/**
 * The llama.cpp commit the series applies to (wasm/patches/BASE: "commit <sha>", "tree <sha>", "tag <tag>" lines).
 * @returns {PatchBase}
 */
export function patchBase() {
  const file = join(patchDir, 'BASE');
  /** @type {Record<string, string>} */
  const fields = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^(\w+)\s+(\S+)\s*$/.exec(line);
    if (m) fields[/** @type {string} */ (m[1])] = /** @type {string} */ (m[2]); // both groups take part in every match
  }
  const { commit, tree, tag } = fields;
  if (!commit || !/^[0-9a-f]{40}$/.test(commit) || !tree || !tag) {
    throw new Error(`${file} should hold "commit <40 hex digits>", "tree <sha>" and "tag <tag>" lines`);
  }
  return { commit, tree, tag };
}

/**
 * Git's identity and settings for applying the series, whatever the user's git config says: a committer for `git am`,
 * whitespace left as the patches have it (apply.whitespace=fix would change the tree), no signing, no hooks' say.
 */
export const amConfig = [
  '-c',
  'user.name=Hearth',
  '-c',
  'user.email=hearth@localhost',
  '-c',
  'apply.whitespace=nowarn',
  '-c',
  'commit.gpgsign=false',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'advice.detachedHead=false',
];

/** @returns {LlamaSource} */
export function llamaSource() {
  // A machine without the bundle (the GPU machine of scripts/device-bench.mjs) names a folder holding the models/
  // files the test models are made from, and a file COMMIT with the commit and tag they came from.
  const given = process.env.HEARTH_LLAMA_DIR;
  if (given) {
    const [commit, tag] = readFileSync(join(given, 'COMMIT'), 'utf8').trim().split(' ');
    if (!commit || !tag) throw new Error(`${join(given, 'COMMIT')} should hold "<commit> <tag>"`);
    return { dir: given, commit, tag };
  }
  const bundle = join(packageDir, 'gitRelease.bundle');
  if (!existsSync(bundle)) {
    throw new Error(
      `llama.cpp source bundle not found at ${bundle}. Run "npm ci" (its prepare step installs tools/llama).`,
    );
  }
  const heads = execFileSync('git', ['bundle', 'list-heads', bundle], { encoding: 'utf8' });
  const commit = /** @type {string} */ (heads.trim().split(/\s+/)[0]); // split gives at least one part
  const tag = JSON.parse(readFileSync(join(packageDir, 'llama.cpp.info.json'), 'utf8')).tag;
  const dir = join(cacheDir, `llama.cpp-${commit.slice(0, 12)}`);
  if (!existsSync(join(dir, 'include', 'llama.h'))) {
    // Clone beside the target and rename, so an interrupted clone never looks like a finished one. One folder per
    // process: the quick tier's test files (no global setup before them) may ask for the source at once.
    mkdirSync(cacheDir, { recursive: true });
    const tmp = `${dir}.partial-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    execFileSync('git', ['-c', 'advice.detachedHead=false', 'clone', '--quiet', bundle, tmp], { stdio: 'inherit' });
    execFileSync('git', ['-C', tmp, '-c', 'advice.detachedHead=false', 'checkout', '--quiet', commit], {
      stdio: 'inherit',
    });
    try {
      renameSync(tmp, dir);
    } catch (err) {
      // Another process got there first: its clone is the same commit.
      if (!existsSync(join(dir, 'include', 'llama.h'))) throw err;
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  return { dir, commit, tag };
}

/**
 * llama.cpp with wasm/patches/*.patch applied by `git am -3` (kernel improvements and fixes not upstream yet), onto the
 * commit wasm/patches/BASE names: a bundle of another commit is refused. Changing a patch makes a fresh, fully patched
 * tree, at the same path (ccache keys objects by their source's path: the files no patch touched come back from it).
 * `patchHash` names the patches' content (wasm/build.mjs writes it into the build's version).
 * @param {LlamaSource} source
 * @returns {PatchedSource}
 */
export function patchedSource(source) {
  const patches = patchFiles();
  if (!patches.length) return source;
  const base = patchBase();
  if (source.commit !== base.commit) {
    const tree = execFileSync('git', ['-C', source.dir, 'rev-parse', `${source.commit}^{tree}`], {
      encoding: 'utf8',
    }).trim();
    const same = tree === base.tree;
    throw new Error(
      `wasm/patches/BASE names llama.cpp ${base.commit.slice(0, 12)} (${base.tag}), but the source is ` +
        `${source.commit.slice(0, 12)} (${source.tag}). ` +
        (same
          ? 'Its tree is the same (node-llama-cpp remade its bundle): put the new commit in wasm/patches/BASE.'
          : 'The patches apply to BASE: pin node-llama-cpp back in tools/llama/package.json, or move the series ' +
            'to this source (npm run patches:rebase -- <bundle>; wasm/patches/README.md) and update BASE.'),
    );
  }
  const hash = createHash('sha256');
  for (const p of patches) hash.update(p).update(readFileSync(join(patchDir, p)));
  const patchHash = hash.digest('hex').slice(0, 8);
  const dir = `${source.dir}-patched`;
  const stamp = join(dir, '.hearth-patches');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== patchHash) {
    // Trees named by the patches' hash (before this layout) are dead weight (~200 MB each).
    for (const old of readdirSync(cacheDir).filter((d) => join(cacheDir, d).startsWith(`${source.dir}-patched-`))) {
      rmSync(join(cacheDir, old), { recursive: true, force: true });
    }
    const tmp = `${dir}.partial`;
    rmSync(tmp, { recursive: true, force: true });
    execFileSync('git', ['-c', 'advice.detachedHead=false', 'clone', '--quiet', source.dir, tmp], { stdio: 'inherit' });
    execFileSync('git', ['-C', tmp, ...amConfig, 'checkout', '--quiet', '--detach', base.commit], { stdio: 'inherit' });
    console.log(
      `[build:wasm] applying ${patches.length} patches (git am -3) onto ${base.tag} ${base.commit.slice(0, 12)}`,
    );
    try {
      execFileSync('git', ['-C', tmp, ...amConfig, 'am', '-3', '--quiet', ...patches.map((p) => join(patchDir, p))], {
        stdio: 'inherit',
      });
    } catch {
      throw new Error(`a patch did not apply onto ${base.commit.slice(0, 12)} (git's message above; the tree: ${tmp})`);
    }
    writeFileSync(join(tmp, '.hearth-patches'), patchHash);
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  }
  return { ...source, dir, patches, patchHash };
}
