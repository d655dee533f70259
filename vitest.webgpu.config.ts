import { defineConfig } from 'vitest/config';
import { buildDefine } from './scripts/build-id.mjs';

// The GPU engine's tests in Node: Node 26 (JSPI), Dawn for Node and lavapipe, through `npm run test:webgpu`
// (scripts/webgpu-node.mjs). One worker: lavapipe uses every core for each dispatch. HEARTH_LARGE=1 (`npm run
// test:large`): the tests of models past 4 GiB instead, minutes each on lavapipe.
export default defineConfig({
  define: { __HEARTH_VERSION__: buildDefine().__HEARTH_VERSION__ },
  test: {
    include: [process.env.HEARTH_LARGE ? 'test/large/**/*.test.ts' : 'test/webgpu/**/*.test.ts'],
    setupFiles: ['test/webgpu/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 300_000,
    hookTimeout: 300_000,
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.cache/reports/webgpu.json' }]] : ['default'],
  },
});
