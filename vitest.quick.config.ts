import { defineConfig } from 'vitest/config';
import { buildDefine } from './scripts/build-id.mjs';

// The quick tier (`npm run test:quick`, seconds): the tests that need no wasm build, no generated model and no browser
// — templates, reading replies and streams, JSON schema, error codes, import layers and stale paths, the app's fit
// rule, the shared-tabs protocol, the remote backend against a hostile server, which build a page gets. Runnable on a
// fresh clone after `npm ci`, with no root. `npm test` runs it first, then everything else (vitest.config.ts).
export default defineConfig({
  define: { __HEARTH_VERSION__: buildDefine().__HEARTH_VERSION__ },
  test: {
    include: ['test/quick/**/*.test.ts'],
    pool: 'forks',
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.cache/reports/quick.json' }]] : ['default'],
  },
});
