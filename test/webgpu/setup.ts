// The GPU tests' environment (vitest.webgpu.config.ts, run by scripts/webgpu-node.mjs): Dawn for Node as the page's
// navigator.gpu, over bookworm-backports' lavapipe (a Vulkan driver on the CPU: a real adapter, with shader-f16).
import { installDawn } from './dawn.ts';

await installDawn();
