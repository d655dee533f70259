// Debian's firefox-esr through puppeteer-core over WebDriver BiDi, in a fresh profile with `prefs`: the e2e tests'
// Firefox (e2e/fixtures.ts) and the GPU benchmark's (bench/browser.ts). Playwright's Firefox channel fails against
// Debian's firefox-esr ("emulation.setMediaFeaturesOverride: unknown command"); never a downloaded browser.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';

/** `protocolTimeout`: how long one call into the page may take (puppeteer's default, 3 minutes, unless given). */
export async function launchFirefox(
  prefs: Record<string, unknown>,
  protocolTimeout?: number,
): Promise<{ browser: Browser; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'hearth-firefox-'));
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr',
    headless: true,
    userDataDir: profile,
    extraPrefsFirefox: prefs,
    protocolTimeout,
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
