// Tries Hearth's llama.cpp patches (wasm/patches, a `git format-patch` series onto the commit wasm/patches/BASE names)
// on another llama.cpp, and reports patch by patch: clean (applies as it is), merged (applies by a three-way merge) or
// conflict (neither: skipped with `git am --skip`, so the rest are still tried; a later patch that builds on a skipped
// one may conflict for that reason alone). Everything happens in a scratch clone under the system's temp folder;
// wasm/patches is only read.
//
//   npm run patches:rebase -- <bundle-or-dir> [commit] [--keep] [--out <dir>] [--json]
//
// <bundle-or-dir>: a git bundle (node-llama-cpp's llama/gitRelease.bundle), a node-llama-cpp package folder (or its
// llama/ folder), a git repository, or a plain source tree. [commit]: what to check out there (default: its HEAD).
// --keep leaves the scratch clone (branch `rebased`: the patches that went in) for resolving conflicts by hand;
// --out <dir> writes the rebased series there with the same format-patch options, when nothing conflicted.
// A three-way merge needs the blobs each patch was made against: the scratch clone borrows the objects of BASE's source
// (llama-source.mjs's clone of the installed bundle) and applies the series onto BASE there first. Exit status: 0 when
// every patch went in, 1 when one conflicted, 2 for a usage error.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { amConfig, llamaSource, patchBase, patchDir, patchFiles } from './llama-source.mjs';

/** @typedef {'clean' | 'merged' | 'conflict'} Outcome */
/**
 * @typedef {{ patch: string, subject: string, outcome: Outcome, files: string[], after: string[] }} PatchResult
 * `files`: where it conflicted; `after`: the skipped patches before it that touched its files (a conflict there may be
 * theirs).
 */
/** @typedef {{ kind: 'bundle' | 'repository' | 'tree', path: string, tag: string | null }} Target */

/** The options `git format-patch` writes the series with (wasm/patches/README.md): stable when regenerated. */
const formatPatchArgs = ['--zero-commit', '--no-signature', '--no-numbered', '--abbrev=12'];

/**
 * @param {string[]} argv
 * @returns {{ source: string, commit: string | null, keep: boolean, out: string | null, json: boolean }}
 */
function parseArgs(argv) {
  /** @type {string[]} */
  const positional = [];
  let keep = false;
  let json = false;
  /** @type {string | null} */
  let out = null;
  for (let i = 0; i < argv.length; i++) {
    const a = /** @type {string} */ (argv[i]); // i < argv.length
    if (a === '--keep') keep = true;
    else if (a === '--json') json = true;
    else if (a === '--out') out = resolve(argv[++i] ?? usage('--out needs a folder'));
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else positional.push(a);
  }
  if (positional.length < 1 || positional.length > 2) usage('give a bundle or a folder, and optionally a commit');
  return { source: resolve(/** @type {string} */ (positional[0])), commit: positional[1] ?? null, keep, out, json };
}

/**
 * @param {string} message
 * @returns {never}
 */
function usage(message) {
  console.error(`rebase-patches: ${message}
usage: npm run patches:rebase -- <bundle-or-dir> [commit] [--keep] [--out <dir>] [--json]`);
  process.exit(2);
}

/**
 * git in `cwd`, with the series' identity and settings; its output, or a thrown error with git's message.
 * @param {string} cwd
 * @param {string[]} args
 * @returns {string}
 */
function git(cwd, args) {
  const r = spawnSync('git', [...amConfig, ...args], { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed in ${cwd}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/**
 * What the argument names, and llama.cpp's release tag where a node-llama-cpp package says it.
 * @param {string} path
 * @returns {Target}
 */
function resolveTarget(path) {
  if (!existsSync(path)) usage(`${path} does not exist`);
  /** @param {string} dir */
  const tagIn = (dir) => {
    const info = join(dir, 'llama.cpp.info.json');
    return existsSync(info) ? String(JSON.parse(readFileSync(info, 'utf8')).tag) : null;
  };
  if (statSync(path).isFile()) return { kind: 'bundle', path, tag: tagIn(resolve(path, '..')) };
  for (const dir of [join(path, 'llama'), path]) {
    const bundle = join(dir, 'gitRelease.bundle');
    if (existsSync(bundle)) return { kind: 'bundle', path: bundle, tag: tagIn(dir) };
  }
  const inside = spawnSync('git', ['-C', path, 'rev-parse', '--show-toplevel'], { encoding: 'utf8' });
  if (inside.status === 0 && resolve(inside.stdout.trim()) === path) return { kind: 'repository', path, tag: null };
  return { kind: 'tree', path, tag: null };
}

/**
 * A scratch repository at the target's commit (detached), returning that commit.
 * @param {Target} target
 * @param {string | null} commit
 * @param {string} scratch
 * @returns {string}
 */
function checkoutTarget(target, commit, scratch) {
  if (target.kind === 'tree') {
    // A plain folder: its files as one commit.
    git(scratch, ['init', '--quiet']);
    execFileSync('git', ['--git-dir', join(scratch, '.git'), '--work-tree', target.path, 'add', '-A'], {
      stdio: 'pipe',
    });
    git(scratch, ['commit', '--quiet', '--no-verify', '-m', `${target.path} as found`]);
    git(scratch, ['reset', '--quiet', '--hard']);
  } else {
    git(tmpdir(), ['clone', '--quiet', '--no-checkout', target.path, scratch]);
    git(scratch, ['checkout', '--quiet', '--detach', commit ?? 'HEAD']);
  }
  return git(scratch, ['rev-parse', 'HEAD']).trim();
}

/**
 * Makes the blobs every patch was made against available in the scratch repository: the pinned source's objects
 * borrowed (alternates), and the series applied onto BASE once. False where the pinned source is not here.
 * @param {string} scratch
 * @param {string[]} patches
 * @returns {boolean}
 */
function prepareThreeWay(scratch, patches) {
  const base = patchBase();
  let dir;
  try {
    dir = llamaSource().dir;
  } catch {
    return false;
  }
  const objects = join(dir, '.git', 'objects');
  if (!existsSync(objects)) return false;
  writeFileSync(join(scratch, '.git', 'objects', 'info', 'alternates'), `${objects}\n`, { flag: 'a' });
  if (spawnSync('git', ['-C', scratch, 'cat-file', '-e', `${base.commit}^{commit}`]).status !== 0) return false;
  const back = git(scratch, ['rev-parse', 'HEAD']).trim();
  git(scratch, ['checkout', '--quiet', '--detach', base.commit]);
  git(scratch, ['am', '--quiet', ...patches]);
  git(scratch, ['branch', '--quiet', '--force', 'series-on-base']);
  git(scratch, ['checkout', '--quiet', '--detach', back]);
  return true;
}

/**
 * A patch's subject (its Subject header, unfolded, without "[PATCH]").
 * @param {string} file
 * @returns {string}
 */
function subjectOf(file) {
  const m = /^Subject: (.*(?:\n[ \t].*)*)/m.exec(readFileSync(file, 'utf8'));
  return m ? (m[1] ?? '').replace(/\n[ \t]+/g, ' ').replace(/^\[PATCH[^\]]*\]\s*/, '') : '(no subject)';
}

/**
 * The files a failed `git am -3` left unmerged, or else those git named in its complaint.
 * @param {string} scratch
 * @param {string} output
 * @returns {string[]}
 */
function conflictFiles(scratch, output) {
  const unmerged = git(scratch, ['diff', '--name-only', '--diff-filter=U']).split('\n').filter(Boolean);
  if (unmerged.length) return unmerged;
  const named = [...output.matchAll(/^error: (?:patch failed: )?([^:\s]+)(?::\d+)?(?:: .*)?$/gm)].map(
    (m) => m[1] ?? '',
  );
  return [...new Set(named.filter((f) => f.includes('/')))];
}

/**
 * The files a patch changes.
 * @param {string} file
 * @returns {string[]}
 */
function touched(file) {
  return [...readFileSync(file, 'utf8').matchAll(/^diff --git a\/(\S+) b\//gm)].map((m) => m[1] ?? '');
}

/**
 * Applies the patches one by one onto the scratch repository's HEAD, on branch `rebased`.
 * @param {string} scratch
 * @param {string[]} patches
 * @returns {PatchResult[]}
 */
function rebase(scratch, patches) {
  git(scratch, ['checkout', '--quiet', '-B', 'rebased']);
  /** @type {Map<string, string[]>} the skipped patches that changed each file */
  const skippedIn = new Map();
  return patches.map((file) => {
    const patch = /** @type {string} */ (file.split('/').pop()); // a path has a last part
    const subject = subjectOf(file);
    if (spawnSync('git', ['-C', scratch, 'apply', '--check', file], { stdio: 'pipe' }).status === 0) {
      git(scratch, ['am', '--quiet', file]);
      return { patch, subject, outcome: 'clean', files: [], after: [] };
    }
    const r = spawnSync('git', [...amConfig, 'am', '-3', '--quiet', file], { cwd: scratch, encoding: 'utf8' });
    if (r.status === 0) return { patch, subject, outcome: 'merged', files: [], after: [] };
    const files = conflictFiles(scratch, `${r.stdout}${r.stderr}`);
    git(scratch, ['am', '--skip']);
    const changes = touched(file);
    const after = [...new Set(changes.flatMap((f) => skippedIn.get(f) ?? []))].sort();
    for (const f of changes) skippedIn.set(f, [...(skippedIn.get(f) ?? []), patch.slice(0, 4)]);
    return { patch, subject, outcome: 'conflict', files, after };
  });
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const base = patchBase();
  const patches = patchFiles().map((p) => join(patchDir, p));
  if (!patches.length) usage(`no patches in ${patchDir}`);
  const target = resolveTarget(args.source);
  const scratch = mkdtempSync(join(tmpdir(), 'hearth-rebase-'));
  try {
    const commit = checkoutTarget(target, args.commit, scratch);
    const threeWay = prepareThreeWay(scratch, patches);
    const results = rebase(scratch, patches);
    const count = (/** @type {Outcome} */ o) => results.filter((r) => r.outcome === o).length;
    const conflicts = count('conflict');
    if (args.out && !conflicts) {
      mkdirSync(args.out, { recursive: true });
      git(scratch, ['format-patch', ...formatPatchArgs, '--quiet', '-o', args.out, `${commit}..rebased`]);
    }
    if (args.json) {
      const summary = { base, target: { ...target, commit }, threeWay, results, scratch: args.keep ? scratch : null };
      console.log(JSON.stringify(summary, null, 2));
    } else {
      console.log(
        `wasm/patches (onto ${base.tag} ${base.commit.slice(0, 12)}) onto ${target.tag ?? 'llama.cpp'} ` +
          `${commit.slice(0, 12)} (${target.kind} ${target.path}):`,
      );
      if (!threeWay) {
        console.log("  (no three-way merges: BASE's source is missing; npm ci installs its bundle)");
      }
      for (const r of results) {
        const files = r.files.length ? `  [${r.files.join(', ')}]` : '';
        const after = r.after.length ? ` (after skipped ${r.after.join(', ')})` : '';
        console.log(`  ${r.patch.slice(0, 4)}  ${r.outcome.padEnd(8)}  ${r.subject}${files}${after}`);
      }
      console.log(
        `${results.length} patches: ${count('clean')} clean, ${count('merged')} merged, ${conflicts} conflict`,
      );
      if (args.out) {
        console.log(conflicts ? `nothing written to ${args.out}: resolve the conflicts first` : `written: ${args.out}`);
      }
      if (args.keep) console.log(`scratch clone kept: ${scratch} (branch rebased; series-on-base: the series on BASE)`);
    }
    process.exitCode = conflicts ? 1 : 0;
  } finally {
    if (!args.keep) rmSync(scratch, { recursive: true, force: true });
  }
}

main();
