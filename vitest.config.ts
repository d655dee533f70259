import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { buildDefine } from './scripts/build-id.mjs';

// Unit tests run in Node against the real wasm build (public/hearth/hearth-st.*) and generated test models. The
// tests that need neither are the quick tier's (test/quick/, vitest.quick.config.ts), which `npm test` runs first.
export default defineConfig({
  // The version engine.info() reports, as in a build (not the build id: the tests' tabs share 'dev').
  define: { __HEARTH_VERSION__: buildDefine().__HEARTH_VERSION__ },
  test: {
    include: ['test/**/*.test.ts'],
    // The GPU engine's tests need Node with JSPI and a WebGPU adapter: vitest.webgpu.config.ts (test/large: npm run
    // test:large).
    exclude: ['test/quick/**', 'test/webgpu/**', 'test/large/**', '**/node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // At least two test files at once: most run the single-thread build, and vitest's default is one worker on a
    // 2-core machine.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // CI counts results from this file (.ci/run).
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.cache/reports/unit.json' }]] : ['default'],
  },
});
