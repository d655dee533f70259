// npm run build:native-vulkan — llama.cpp's own `llama-bench` with its Vulkan backend, built natively from the pinned
// source (scripts/llama-source.mjs, unpatched: what llama.cpp itself does on a GPU) into
// .cache/native-vulkan/llama-bench. `npm run bench -- webgpu --node` runs it beside the GPU engine on the same
// adapter, model and token counts (the ratio to native is what the browser costs), and scripts/device-bench.mjs carries
// it to the GPU machine. Not part of npm test: the shaders alone take about 20 minutes of 2 cores.
//
// What it is built with, and why: the host's g++ (bookworm's glibc 2.36, so the binary runs here and on the GPU
// machine's Ubuntu 24.04) against trixie's Vulkan and SPIR-V headers (1.4.309) and trixie's glslc (shaderc 2025.2),
// unpacked from Debian (scripts/debian-files.mjs). Bookworm's glslc 2023.2 cannot compile GL_KHR_cooperative_matrix or
// GL_NV_cooperative_matrix2, and without them llama.cpp builds no matrix-unit shaders: native would run slower on an
// NVIDIA GPU than llama.cpp does, and the ratio would flatter the GPU engine. Trixie's glslc needs trixie's C library,
// so it runs inside the wasm build root (scripts/toolchain.mjs) through a small wrapper. The binary links the host's
// Vulkan loader (libvulkan1); llama.cpp resolves every Vulkan function through it at run time.
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cmakeBuild, nativeCmakeArgs } from './build-server.mjs';
import { debianFiles } from './debian-files.mjs';
import { cacheDir, llamaSource } from './llama-source.mjs';
import { ensurePackages } from './system-packages.mjs';
import { ensureToolchain, toolchainArgs } from './toolchain.mjs';

export const nativeVulkanDir = join(cacheDir, 'native-vulkan');
export const llamaBenchBinary = join(nativeVulkanDir, 'llama-bench');
const loader = '/usr/lib/x86_64-linux-gnu/libvulkan.so.1';

const cmakeArgs = {
  ...nativeCmakeArgs,
  LLAMA_BUILD_SERVER: 'OFF',
  GGML_VULKAN: 'ON',
  // The CPU's part (what llama.cpp keeps off the GPU) for any x86-64: the binary runs on another machine.
  GGML_NATIVE: 'OFF',
};

/**
 * trixie's glslc, run inside the build root by a shell script CMake can call as the compiler (one per shader).
 * @param {string} files the unpacked Debian files (debianFiles)
 * @returns {string} the wrapper's path
 */
function glslcWrapper(files) {
  const lib = join(files, 'usr', 'lib', 'x86_64-linux-gnu');
  // In the caller's folder (the build tree, inside the repository, which the root shows at the same path): the
  // shader generator may name files relative to it.
  const here = '\0here';
  const args = toolchainArgs('env', [`LD_LIBRARY_PATH=${lib}`, join(files, 'usr', 'bin', 'glslc')], { cwd: here });
  const quote = (/** @type {string} */ a) => (a === here ? '"$PWD"' : `'${a.replaceAll("'", "'\\''")}'`);
  const wrapper = join(nativeVulkanDir, 'glslc');
  writeFileSync(wrapper, `#!/bin/sh\nexec bwrap ${args.map(quote).join(' ')} "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}

function main() {
  const source = llamaSource();
  const stampFile = join(nativeVulkanDir, 'llama-bench.stamp');
  const stamp = JSON.stringify({ commit: source.commit, cmakeArgs });
  if (existsSync(llamaBenchBinary) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) {
    console.log(`[build:native-vulkan] ${llamaBenchBinary} (up to date)`);
    return;
  }
  ensurePackages('server');
  ensurePackages('webgpu'); // the Vulkan loader
  ensureToolchain();
  const t0 = Date.now();
  mkdirSync(nativeVulkanDir, { recursive: true });
  const files = debianFiles('native-vulkan', ['trixie'], ['glslc', 'libshaderc1', 'libvulkan-dev', 'spirv-headers']);
  const buildDir = join(nativeVulkanDir, 'build');
  cmakeBuild({
    source,
    buildDir,
    defs: {
      ...cmakeArgs,
      Vulkan_INCLUDE_DIR: join(files, 'usr', 'include'),
      Vulkan_LIBRARY: loader,
      Vulkan_GLSLC_EXECUTABLE: glslcWrapper(files),
      'SPIRV-Headers_DIR': join(files, 'usr', 'share', 'cmake', 'SPIRV-Headers'),
    },
    target: 'llama-bench',
    ccacheDir: join(cacheDir, 'ccache-native'),
  });
  copyFileSync(join(buildDir, 'bin', 'llama-bench'), `${llamaBenchBinary}.partial`);
  renameSync(`${llamaBenchBinary}.partial`, llamaBenchBinary);
  writeFileSync(stampFile, stamp);
  console.log(
    `[build:native-vulkan] ${llamaBenchBinary} (llama.cpp ${source.tag}+${source.commit.slice(0, 12)}, Vulkan, built in ${((Date.now() - t0) / 1000).toFixed(0)} s)`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main();
  } catch (err) {
    console.error(`[build:native-vulkan] failed: ${/** @type {Error} */ (err).message.split('\n')[0]}`);
    process.exit(1);
  }
}
