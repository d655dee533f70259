// Packs `npm run bench -- webgpu --node` for the GPU machine (the device tool, when a session has one). Run it after
// ../shared/gpu/prepare-device.sh, which puts Node 26, Dawn for Node and the Vulkan loader in .device-carry/. This
// adds .device-carry/bench/: bench/run.ts bundled (esbuild), the wasm builds the scenario loads, and the tokenizer
// and chat template the benchmark model is made from — xz'd, as a device call carries 64 MiB; the model itself
// (530 MB) is generated there. Then call the device tool with carry [".device-carry"] and the command
//   bash .device-carry/bench/run.sh webgpu --node --json --threads 16 [--trace] [--long] [--large]
// or, for a long conversation's state saved and restored (issue 55: an 8B model's shapes with --large),
//   bash .device-carry/bench/run.sh restore --node --json --threads 16 --reps 1 [--large]
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildDefine } from './build-id.mjs';
import { llamaSource, root } from './llama-source.mjs';

const carry = join(root, '.device-carry');
if (!existsSync(join(carry, 'setup.sh'))) throw new Error('run ../shared/gpu/prepare-device.sh first');
const out = join(carry, 'bench');
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'public', 'hearth'), { recursive: true });
mkdirSync(join(out, 'llama', 'models', 'templates'), { recursive: true });

const define = Object.entries(buildDefine()).flatMap(([k, v]) => [`--define:${k}=${v}`]);
execFileSync(
  join(root, 'node_modules', '.bin', 'esbuild'),
  [
    'bench/run.ts',
    '--bundle',
    '--platform=node',
    '--format=esm',
    '--splitting',
    '--out-extension:.js=.mjs',
    '--outdir=.device-carry/bench/bench',
    '--log-level=warning',
    // The CJS packages inside call require().
    "--banner:js=import { createRequire as hearthRequire } from 'node:module'; const require = hearthRequire(import.meta.url);",
    // Browser and native tooling of the other scenarios, never loaded by this one.
    '--external:puppeteer-core',
    '--external:node-llama-cpp',
    '--external:vite',
    ...define,
  ],
  { cwd: root, stdio: 'inherit' },
);

// The GPU build, the threaded CPU builds (relaxed and plain, as the CPU's SIMD allows) and the single-thread build
// (its quantizer makes the Q4_K_M model).
const wasm = join(root, 'public', 'hearth');
for (const f of ['webgpu.js', 'webgpu.wasm', 'mt.js', 'mt.wasm', 'mt-relaxed.wasm', 'st.js', 'st.wasm']) {
  execFileSync('sh', [
    '-c',
    `xz -T2 -6 -c "${join(wasm, `hearth-${f}`)}" > "${join(out, 'public', 'hearth', `hearth-${f}.xz`)}"`,
  ]);
}
const source = llamaSource();
// The benchmark models' tokenizers and templates (Qwen2.5's shapes; Llama-3.2-1B's for webgpu --large, Llama-3.1-8B's
// for restore --large).
const vocabs = ['ggml-vocab-qwen2.gguf', 'ggml-vocab-llama-bpe.gguf'];
const templates = [
  'templates/Qwen-Qwen2.5-7B-Instruct.jinja',
  'templates/meta-llama-Llama-3.2-3B-Instruct.jinja',
  'templates/meta-llama-Llama-3.1-8B-Instruct.jinja',
];
for (const f of [...vocabs, ...templates]) copyFileSync(join(source.dir, 'models', f), join(out, 'llama', 'models', f));
for (const f of vocabs) execFileSync('xz', ['-T2', '-6', join(out, 'llama', 'models', f)]);
writeFileSync(join(out, 'llama', 'COMMIT'), `${source.commit} ${source.tag}\n`);
// Native llama.cpp with Vulkan (npm run build:native-vulkan), run beside the GPU engine on the same GPU.
const llamaBench = join(root, '.cache', 'native-vulkan', 'llama-bench');
if (existsSync(llamaBench))
  execFileSync('sh', ['-c', `xz -T2 -6 -c "${llamaBench}" > "${join(out, 'llama-bench.xz')}"`]);
else console.warn('[device-bench] no native llama-bench (npm run build:native-vulkan): the run will leave native out');

writeFileSync(
  join(out, 'run.sh'),
  `#!/usr/bin/env bash
# On the GPU machine: unpacks into /tmp/hearth-bench (the bundle finds the wasm builds at ../public/hearth and makes
# the models in ../.cache/models) and runs bench/run.ts with the arguments given, on the GPU through Dawn with
# shader-f16 (NVIDIA's Vulkan driver needs Dawn's toggle for it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# Every call: a call re-sends .device-carry/ (removing what setup.sh unpacked there) and may carry a new bundle; the
# models made in $w/.cache stay while the machine is warm, so a second call starts at once.
bash "$here/../setup.sh" >/dev/null
. /tmp/device-env.sh
w=/tmp/hearth-bench
rm -rf "$w/bench" "$w/public" "$w/llama" "$w/llama-bench"; mkdir -p "$w"
cp -r "$here/bench" "$here/public" "$here/llama" "$w/"
[ -f "$here/llama-bench.xz" ] && xz -dc "$here/llama-bench.xz" > "$w/llama-bench" && chmod +x "$w/llama-bench"
find "$w" -name '*.xz' -exec xz -d -f {} +
echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); cpu: $(nproc) x $(lscpu | sed -n 's/^Model name: *//p')"
export HEARTH_WEBGPU="$WEBGPU" HEARTH_LLAMA_DIR="$w/llama" HEARTH_LLAMA_BENCH="$w/llama-bench"
export HEARTH_DAWN_FLAGS="\${HEARTH_DAWN_FLAGS-enable-dawn-features=vulkan_enable_f16_on_nvidia,allow_unsafe_apis}"
cd "$w" && node bench/run.mjs "$@"
`,
);
execFileSync('du', ['-sh', carry], { stdio: 'inherit' });
console.log(
  'ready: device tool, carry [".device-carry"], command: bash .device-carry/bench/run.sh webgpu --node --json --threads 16',
);
