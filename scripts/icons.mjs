// node scripts/icons.mjs — renders public/favicon.svg into the app's PNG icons (public/icons/), with the system
// Chromium. The PNGs are committed: run this again only when the SVG changes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from '@playwright/test';
import { root } from './llama-source.mjs';

const svg = readFileSync(join(root, 'public/favicon.svg'), 'utf8');
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
/** @type {[size: number, maskable: boolean][]} */
const icons = [
  [192, false],
  [512, false],
  [512, true],
];
for (const [size, maskable] of icons) {
  const page = await browser.newPage({ viewport: { width: size, height: size } });
  // A maskable icon keeps its drawing inside the central 80% circle and fills the rest.
  const pad = maskable ? size * 0.18 : size * 0.06;
  await page.setContent(
    `<body style="margin:0;background:${maskable ? '#fff4e8' : 'transparent'}">` +
      `<div style="padding:${pad}px;width:${size - 2 * pad}px;height:${size - 2 * pad}px">${svg.replace('<svg ', '<svg width="100%" height="100%" ')}</div></body>`,
  );
  await page.screenshot({
    path: join(root, `public/icons/icon-${size}${maskable ? '-maskable' : ''}.png`),
    omitBackground: !maskable,
  });
  await page.close();
}
await browser.close();
