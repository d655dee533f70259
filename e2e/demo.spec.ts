// The demo page as a newcomer uses it: load the test model, chat, stop, ask again.
import { expect, test } from '@playwright/test';
import { savedConversations } from './kv.ts';

test('load a model, stream an answer, stop a long one, ask again', async ({ page }) => {
  await page.goto('/');
  await expect(page.locator('#engine-status')).toContainText('llama.cpp');
  await expect(page.locator('#engine-status')).toContainText('SIMD on');
  const icon = await page.request.get((await page.locator('link[rel=icon]').getAttribute('href')) ?? '');
  expect(icon.headers()['content-type']).toContain('image/svg+xml'); // public/ is served as the site's static assets
  await expect(page.locator('#source-kind')).toHaveValue('test'); // offered because the server has test models
  await page.click('#load');
  await expect(page.locator('#load-status')).toContainText('Ready');

  // What the user types is shown as text, never as HTML.
  await page.fill('#prompt', 'Hi <img src=x onerror="window.pwned=1"> there');
  await page.press('#prompt', 'Enter');
  await expect(page.locator('.msg.assistant').last()).toHaveText('Hello, world!');
  await expect(page.locator('.msg.user').last()).toHaveText('Hi <img src=x onerror="window.pwned=1"> there');
  expect(await page.locator('.msg img').count()).toBe(0);
  await expect(page.locator('#stats')).toContainText(/TTFT \d+ ms · [\d.]+ tokens\/s/);

  // A model that rambles (random weights, no end token in sight): stop it, then ask again.
  await page.selectOption('#source-kind', 'url');
  await page.fill('#model-url', '/test-models/qwen2-tiny.gguf');
  await page.click('#load');
  await expect(page.locator('#load-status')).toContainText('Ready');
  await page.fill('#prompt', 'Tell me a long story.');
  await page.click('#send');
  const answer = page.locator('.msg.assistant').last();
  await expect(answer).not.toHaveText('');
  await page.click('#stop');
  await expect(answer.locator('.note')).toHaveText('stopped');
  await expect(page.locator('#send')).toBeEnabled();
  const stoppedText = await answer.textContent();
  await page.waitForTimeout(300);
  expect(await answer.textContent()).toBe(stoppedText); // nothing arrives after Stop

  await page.fill('#prompt', 'And another one?');
  await page.press('#prompt', 'Enter');
  await expect(page.locator('.msg.assistant')).toHaveCount(3);
  await expect(page.locator('.msg.assistant').last()).not.toHaveText('');
  await page.click('#stop');
  await expect(page.locator('.msg.assistant').last().locator('.note')).toHaveText('stopped');
  expect(await page.evaluate(() => (window as { pwned?: number }).pwned)).toBeUndefined();
});

test('after a reload the conversation is back and the next answer starts from the state saved in IndexedDB', async ({
  page,
}) => {
  await page.goto('/');
  await expect(page.locator('#engine-status')).toContainText('llama.cpp');
  await expect(page.locator('#source-kind')).toHaveValue('test');
  await page.click('#load');
  await expect(page.locator('#load-status')).toContainText('Ready');
  // Long enough to be worth saving (the cache keeps prompts of 100 tokens and more).
  const long = `Here is what I need help with today. ${'I keep bread, rivers, stars, maps and tea in mind. '.repeat(12)}`;
  await page.fill('#prompt', long);
  await page.press('#prompt', 'Enter');
  await expect(page.locator('.msg.assistant').last()).toHaveText('Hello, world!');
  await expect(page.locator('#stats')).not.toContainText('cached');
  // The save runs after the answer, in the background: wait until IndexedDB has the conversation.
  await expect.poll(() => page.evaluate(savedConversations)).toBe(1);

  await page.reload();
  await expect(page.locator('.msg.user')).toHaveText([long]);
  await expect(page.locator('.msg.assistant')).toHaveText(['Hello, world!']);
  await expect(page.locator('#engine-status')).toContainText('llama.cpp');
  await page.click('#load');
  await expect(page.locator('#load-status')).toContainText('Ready');
  await page.fill('#prompt', 'And now?');
  await page.press('#prompt', 'Enter');
  await expect(page.locator('.msg.assistant')).toHaveCount(2);
  await expect(page.locator('.msg.assistant').last()).toHaveText('Hello, world!');
  await expect(page.locator('#stats')).toContainText(/\d+ cached \(restored from IndexedDB\)/);
});
