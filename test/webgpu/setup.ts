// The GPU tests' environment (vitest.webgpu.config.ts, run by scripts/webgpu-node.mjs): Dawn for Node as the page's
// navigator.gpu, over bookworm-backports' lavapipe (a Vulkan driver on the CPU: a real adapter, with shader-f16).
const dawn = process.env.HEARTH_WEBGPU;
if (!dawn) throw new Error('run the GPU tests through scripts/webgpu-node.mjs (npm run test:webgpu)');
const { create, globals } = (await import(dawn)) as {
  create: (flags: string[]) => unknown;
  globals: Record<string, unknown>;
};
Object.assign(globalThis, globals);
Object.defineProperty(globalThis.navigator, 'gpu', { value: create([]), configurable: true });
export {};
