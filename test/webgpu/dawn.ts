// Dawn for Node as this process's navigator.gpu (the WebGPU globals too), from the `webgpu` package at
// $HEARTH_WEBGPU: what scripts/webgpu-node.mjs sets up here (lavapipe), and the device machine's setup (a real GPU).
// $HEARTH_DAWN_FLAGS: Dawn's options, separated by spaces (one option's value is a comma-separated list). On NVIDIA:
// enable-dawn-features=vulkan_enable_f16_on_nvidia,allow_unsafe_apis — without the first the adapter has no
// shader-f16, without the second no chromium-experimental-subgroup-matrix.
export async function installDawn(): Promise<void> {
  const dawn = process.env.HEARTH_WEBGPU;
  if (!dawn)
    throw new Error('no Dawn: run through scripts/webgpu-node.mjs (npm run test:webgpu), or set HEARTH_WEBGPU');
  const { create, globals } = (await import(dawn)) as {
    create: (flags: string[]) => unknown;
    globals: Record<string, unknown>;
  };
  Object.assign(globalThis, globals);
  const flags = process.env.HEARTH_DAWN_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
  Object.defineProperty(globalThis.navigator, 'gpu', { value: create(flags), configurable: true });
}
