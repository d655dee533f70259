import { defineConfig } from 'vitest/config';

// Unit tests run in Node against the real wasm build (public/hearth/hearth-st.*) and generated test models.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // CI counts results from this file (.ci/run).
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.cache/reports/unit.json' }]] : ['default'],
  },
});
