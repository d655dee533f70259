// The app as a user meets it: many conversations (new, rename, delete, search), edit and resend, regenerate,
// settings kept; installed (manifest + service worker) and used offline, the conversation continuing with its KV
// state from IndexedDB. Screenshots for the README are taken here (docs/).
import { mkdirSync } from 'node:fs';
import { expect, test, type Page } from '@playwright/test';
import { savedConversations } from './kv.ts';

async function openApp(page: Page) {
  await page.goto('/');
  await expect(page.locator('#engine-status')).toContainText('llama.cpp');
  await page.selectOption('#source-kind', 'test');
  await page.click('#load');
  await expect(page.locator('#load-status')).toContainText('Ready');
}

async function ask(page: Page, text: string) {
  const before = await page.locator('.msg.assistant').count();
  await page.fill('#prompt', text);
  await page.press('#prompt', 'Enter');
  await expect(page.locator('.msg.assistant')).toHaveCount(before + 1);
  await expect(page.locator('.msg.assistant').last()).toHaveText('Hello, world!');
  await expect(page.locator('#send')).toBeEnabled();
}

const titles = (page: Page) => page.locator('#conversations .title');

/** A conversation of a <hearth-chat> widget on the same site: same store, not one of the app's. */
function keepWidgetConversation(): Promise<void> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open('hearth-chat');
    open.onupgradeneeded = () => open.result.createObjectStore('conversations');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction('conversations', 'readwrite');
      const messages = [{ role: 'user', content: 'Do you deliver?' }, { role: 'assistant', content: 'Yes.' }];
      tx.objectStore('conversations').put({ id: 'widget:default', title: 'Do you deliver?', messages, updatedAt: Date.now() }, 'widget:default');
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    };
  });
}

test('conversations: new, rename, search, delete; edit and resend; regenerate; settings kept', async ({ page }) => {
  await page.goto('/');
  await page.evaluate(keepWidgetConversation);
  await openApp(page);
  await ask(page, 'How do I feed a **sourdough** starter?');
  await ask(page, 'And how often?');
  await page.click('#new-chat');
  await expect(page.locator('.msg')).toHaveCount(0);
  await ask(page, 'Which flour for rye bread?');
  await expect(titles(page)).toHaveText(['Which flour for rye bread?', 'How do I feed a **sourdough** starter?']);

  // Rename in place; search filters titles.
  await page.locator('#conversations li').nth(1).locator('.rename').click();
  await page.fill('.rename-input', 'Starter care');
  await page.press('.rename-input', 'Enter');
  await expect(titles(page)).toHaveText(['Which flour for rye bread?', 'Starter care']);
  await page.fill('#search', 'starter');
  await expect(titles(page)).toHaveText(['Starter care']);
  await page.fill('#search', '');

  // Open the first conversation again: both exchanges are there, and what the user wrote shows as text.
  await titles(page).filter({ hasText: 'Starter care' }).click();
  await expect(page.locator('.msg.user')).toHaveText(['How do I feed a **sourdough** starter?', 'And how often?']);

  // Edit and resend the first message: the conversation goes back to it.
  await page.locator('.msg.user').first().locator('.edit').click();
  await expect(page.locator('#prompt')).toHaveValue('How do I feed a **sourdough** starter?');
  await expect(page.locator('.msg')).toHaveCount(0);
  await ask(page, 'How do I feed a rye starter?');
  await expect(page.locator('.msg.user')).toHaveText(['How do I feed a rye starter?']);

  // Regenerate replaces the last answer, not adds one.
  await page.click('#regenerate');
  await expect(page.locator('#send')).toBeEnabled();
  await expect(page.locator('.msg.assistant')).toHaveText(['Hello, world!']);
  await expect(page.locator('.msg.user')).toHaveText(['How do I feed a rye starter?']);

  // Settings and conversations survive a reload.
  await page.locator('#settings summary').click();
  await page.fill('#system-prompt', 'You are a baker.');
  await page.fill('#temperature', '0.2');
  await page.selectOption('#overflow', 'shift');
  await page.locator('#overflow').dispatchEvent('change');
  await page.reload();
  await expect(page.locator('.msg.user')).toHaveText(['How do I feed a rye starter?']);
  await expect(titles(page)).toHaveText(['Starter care', 'Which flour for rye bread?']);
  await expect(page.locator('#system-prompt')).toHaveValue('You are a baker.');
  await expect(page.locator('#temperature')).toHaveValue('0.2');
  await expect(page.locator('#overflow')).toHaveValue('shift');

  // Delete the open conversation: a new one starts; the other stays.
  await page.locator('#conversations li').filter({ hasText: 'Starter care' }).locator('.delete').click();
  await expect(titles(page)).toHaveText(['Which flour for rye bread?']);
  await expect(page.locator('.msg')).toHaveCount(0);
  await page.reload();
  await expect(titles(page)).toHaveText(['Which flour for rye bread?']);
});

test('installed and offline: the service worker serves the app, the model comes from the store, the conversation continues from IndexedDB', async ({ page, context }) => {
  await openApp(page);
  const manifest = await page.request.get('/manifest.webmanifest');
  expect(await manifest.json()).toMatchObject({ display: 'standalone', start_url: '/' });
  await page.evaluate(() => navigator.serviceWorker.ready);
  // Long enough to be worth saving (the cache keeps prompts of 100 tokens and more).
  const long = 'Here is what I need help with today. ' + 'I keep bread, rivers, stars, maps and tea in mind. '.repeat(12);
  await ask(page, long);
  await expect(page.locator('#stats')).toContainText('tokens/s');
  await expect.poll(() => page.evaluate(savedConversations)).toBe(1); // the KV save runs after the answer
  mkdirSync('docs', { recursive: true });
  await page.screenshot({ path: 'docs/app.png' });

  await context.setOffline(true);
  await page.reload();
  expect(await page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
  expect(await page.evaluate(() => navigator.onLine)).toBe(false);
  await expect(page.locator('#engine-status')).toContainText('llama.cpp');
  await expect(page.locator('.msg.user')).toHaveText([long]);
  await expect(page.locator('#source-kind')).toHaveValue('test');
  await page.click('#load');
  await expect(page.locator('#load-status')).toContainText('Ready');
  await ask(page, 'And now?');
  await expect(page.locator('#stats')).toContainText(/\d+ cached \(restored from IndexedDB\)/);
});

test('two tabs of the app share one engine: the second starts no worker, and chats on after the first closes', async ({ page, context }) => {
  await openApp(page);
  const second = await context.newPage();
  await openApp(second);
  await expect(second.locator('#engine-status')).toContainText('shared by 2 tabs');
  expect(second.workers()).toHaveLength(0);
  await second.click('#new-chat');
  await ask(second, 'Which flour for rye bread?');
  await ask(page, 'How do I feed a starter?');
  await expect(page.locator('#engine-status')).toContainText('shared by 2 tabs, run by this one');
  await page.close();
  await ask(second, 'And for spelt?');
  await expect(second.locator('.msg.user')).toHaveText(['Which flour for rye bread?', 'And for spelt?']);
  expect(second.workers().length).toBeGreaterThan(0);
  await expect(second.locator('#engine-status')).not.toContainText('shared by');
});
