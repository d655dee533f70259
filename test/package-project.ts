// Projects that install the npm package as its users do: from the packed tarball (npm run build:package) with npm,
// no workspace links, each in a fresh folder under .cache/package-tests/. Used by test/package.test.ts (Node) and
// e2e/package.spec.ts (a Vite app and a static page in Chromium).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PACKAGE_NAME, stageDir, tarballPath } from '../scripts/build-package.mjs';
import { root } from '../scripts/llama-source.mjs';

export { PACKAGE_NAME, stageDir };
export const projectsDir = join(root, '.cache', 'package-tests');

/** The packed package; an error that says how to make it when it is missing. */
export function tarball(): string {
  if (!existsSync(tarballPath)) throw new Error(`${tarballPath} is missing: run "npm run build:package" first`);
  return tarballPath;
}

/** A new project in .cache/package-tests/<name>/ with `files`, the tarball and `also` (e.g. a bundler) installed;
 * returns its folder. */
export function freshProject(name: string, files: Record<string, string>, also: string[] = []): string {
  const dir = join(projectsDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `try-${name}`, private: true, type: 'module' }));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  // --prefer-offline: the dependencies come from npm's cache when `npm ci` of this repository put them there.
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball(), ...also],
    { cwd: dir, stdio: 'pipe' },
  );
  return dir;
}
