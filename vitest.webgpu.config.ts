import { defineConfig } from 'vitest/config';
import { buildDefine } from './scripts/build-id.mjs';

// The GPU engine's tests in Node: Node 26 (JSPI), Dawn for Node and lavapipe, through `npm run test:webgpu`
// (scripts/webgpu-node.mjs). One worker: lavapipe uses every core for each dispatch.
export default defineConfig({
  define: { __HEARTH_VERSION__: buildDefine().__HEARTH_VERSION__ },
  test: {
    include: ['test/webgpu/**/*.test.ts'],
    setupFiles: ['test/webgpu/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.cache/reports/webgpu.json' }]] : ['default'],
  },
});
