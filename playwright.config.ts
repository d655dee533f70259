import { defineConfig } from '@playwright/test';

// E2E tests in Debian's Chromium (never a downloaded browser) against the built site (vite preview), served twice:
// with COOP/COEP (cross-origin isolated: threaded wasm) and without (single-thread wasm).
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: 'e2e',
  globalSetup: './e2e/global-setup.ts',
  timeout: 180_000,
  expect: { timeout: 60_000 },
  workers: 1, // the engine's threads need the machine's cores
  outputDir: '.cache/playwright',
  // CI counts results from the JSON file (.ci/run).
  reporter: process.env.CI ? [['list'], ['json', { outputFile: '.cache/reports/e2e.json' }]] : [['list']],
  use: {
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    },
  },
  projects: [
    { name: 'isolated', use: { baseURL: 'http://localhost:4173' } },
    { name: 'not-isolated', use: { baseURL: 'http://localhost:4174' } },
  ],
  webServer: [
    { command: 'npx vite preview --port 4173 --strictPort', port: 4173, reuseExistingServer: !process.env.CI },
    {
      command: 'npx vite preview --port 4174 --strictPort', port: 4174, reuseExistingServer: !process.env.CI,
      env: { HEARTH_ISOLATION: 'off' },
    },
  ],
});
