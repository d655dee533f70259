// The app as a user meets it: many conversations (new, rename, delete, search), edit and resend, regenerate,
// settings kept, downloaded models listed and deleted; installed (manifest + service worker) and used offline, the
// conversation continuing with its KV state from IndexedDB; a new version applied only when the visitor accepts it,
// never mixed with the old; images and audio (a file, the microphone) for a model loaded with its projector. Chromium
// and Firefox. Screenshots for the README and docs/app.md are taken here (docs/, Chromium).
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { testPng, testWav } from '../test/fixtures/media.ts';
import { PROJECTORS } from '../test/fixtures/projectors.ts';
import {
  APP_COMPOSER,
  b64,
  drawnThumbnails,
  loadWithProjector,
  putFiles,
  sendAndWait,
  storedClips,
  type TestFile,
} from './attach.ts';
import { expect, test } from './fixtures.ts';
import { putConversations, savedConversations } from './kv.ts';
import { countWorkers, served, servedLog, type Site, type Tab, workersStarted } from './site.ts';

async function openApp(site: Site): Promise<Tab> {
  const tab = await site.tab('/');
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await tab.evaluate(() => {
    const kind = document.getElementById('source-kind') as HTMLSelectElement;
    kind.value = 'test';
    kind.dispatchEvent(new Event('change'));
  });
  await tab.click('#load');
  await expect.poll(() => tab.texts('#load-status')).toEqual([expect.stringContaining('Ready')]);
  return tab;
}

async function ask(tab: Tab, text: string) {
  const before = await tab.count('.msg.assistant');
  await tab.fill('#prompt', text);
  await tab.press('#prompt', 'Enter');
  await expect.poll(() => tab.count('.msg.assistant')).toBe(before + 1);
  await expect.poll(async () => (await tab.texts('.msg.assistant')).at(-1)).toBe('Hello, world!');
  await expect
    .poll(() => tab.evaluate(() => (document.getElementById('send') as HTMLButtonElement).disabled))
    .toBe(false);
  // Answered, not failed: a failed send takes the message back out and shows an error (the count above can pass on the
  // moment between, with the last answer an older one).
  expect((await tab.texts('.msg.user')).at(-1)).toBe(text.trim()); // shown trimmed
  expect(await tab.texts('.msg.error')).toEqual([]);
}

const titles = (tab: Tab) => tab.texts('#conversations .title');

/** A conversation of a <hearth-chat> widget on the same site: same store, not one of the app's. */
const WIDGET_CONVERSATION = {
  id: 'widget:default',
  title: 'Do you deliver?',
  updatedAt: Date.now(),
  messages: [
    { role: 'user', content: 'Do you deliver?' },
    { role: 'assistant', content: 'Yes.' },
  ],
};

test('conversations: new, rename, search, delete; edit and resend; regenerate; settings kept; downloaded models deleted', async ({
  site,
}) => {
  const first = await site.tab('/');
  await first.evaluate(putConversations, [WIDGET_CONVERSATION]);
  await first.close();
  const tab = await openApp(site);
  await ask(tab, 'How do I feed a **sourdough** starter?');
  await ask(tab, 'And how often?');
  await tab.click('#new-chat');
  expect(await tab.count('.msg')).toBe(0);
  await ask(tab, 'Which flour for rye bread?');
  await expect
    .poll(() => titles(tab))
    .toEqual(['Which flour for rye bread?', 'How do I feed a **sourdough** starter?']);

  // Rename in place; search filters titles.
  await tab.click('#conversations li:nth-child(2) .rename');
  await tab.fill('.rename-input', 'Starter care');
  await tab.press('.rename-input', 'Enter');
  await expect.poll(() => titles(tab)).toEqual(['Which flour for rye bread?', 'Starter care']);
  await tab.fill('#search', 'starter');
  await expect.poll(() => titles(tab)).toEqual(['Starter care']);
  await tab.fill('#search', '');
  await expect.poll(() => titles(tab)).toHaveLength(2);

  // Open the first conversation again: both exchanges are there, and what the user wrote shows as text.
  await tab.click('#conversations li:nth-child(2) .title');
  await expect.poll(() => tab.texts('.msg.user')).toEqual(['How do I feed a **sourdough** starter?', 'And how often?']);

  // Edit and resend the first message: the conversation goes back to it.
  await tab.click('.msg.user .edit');
  expect(await tab.evaluate(() => (document.getElementById('prompt') as HTMLTextAreaElement).value)).toBe(
    'How do I feed a **sourdough** starter?',
  );
  expect(await tab.count('.msg')).toBe(0);
  await ask(tab, 'How do I feed a rye starter?');
  expect(await tab.texts('.msg.user')).toEqual(['How do I feed a rye starter?']);

  // Regenerate replaces the last answer, not adds one.
  await tab.click('#regenerate');
  await expect
    .poll(() => tab.evaluate(() => (document.getElementById('send') as HTMLButtonElement).disabled))
    .toBe(false);
  await expect.poll(() => tab.texts('.msg.assistant')).toEqual(['Hello, world!']);
  expect(await tab.texts('.msg.user')).toEqual(['How do I feed a rye starter?']);

  // Settings and conversations survive a reload.
  await tab.click('#settings summary');
  await tab.fill('#system-prompt', 'You are a baker.');
  await tab.fill('#temperature', '0.2');
  await tab.evaluate(() => {
    (document.getElementById('overflow') as HTMLSelectElement).value = 'shift';
    for (const id of ['system-prompt', 'temperature', 'overflow']) {
      document.getElementById(id)!.dispatchEvent(new Event('change'));
    }
  });
  // The downloaded models: the test model, with its size, and a Delete button.
  await expect
    .poll(() => tab.texts('#stored-models .model-name'))
    .toEqual([expect.stringMatching(/^qwen2-hello\.gguf · [\d.]+ MiB$/)]);
  await tab.reload();
  await expect.poll(() => tab.texts('.msg.user')).toEqual(['How do I feed a rye starter?']);
  await expect.poll(() => titles(tab)).toEqual(['Starter care', 'Which flour for rye bread?']);
  expect(
    await tab.evaluate(() =>
      ['system-prompt', 'temperature', 'overflow'].map((id) => (document.getElementById(id) as HTMLInputElement).value),
    ),
  ).toEqual(['You are a baker.', '0.2', 'shift']);

  // Delete the open conversation: a new one starts; the other stays.
  await tab.click('#conversations li:nth-child(1) .delete');
  await expect.poll(() => titles(tab)).toEqual(['Which flour for rye bread?']);
  expect(await tab.count('.msg')).toBe(0);
  await tab.reload();
  await expect.poll(() => titles(tab)).toEqual(['Which flour for rye bread?']);

  // Delete the downloaded model: the list is empty, and the store with it.
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  // The engine's long status line did not move the page under the pointer: the header is as high as with a short one
  // (in Firefox's 800-pixel window it once wrapped as the engine came up, and a click on Delete landed in the search box).
  expect(
    await tab.evaluate(() => {
      const status = document.getElementById('engine-status')!;
      const long = status.textContent;
      const height = () => document.querySelector('header')!.getBoundingClientRect().height;
      const withLong = height();
      status.textContent = 'ready';
      const withShort = height();
      status.textContent = long;
      return withLong - withShort;
    }),
  ).toBe(0);
  await tab.click('#settings summary');
  await expect.poll(() => tab.count('#stored-models .delete-model')).toBe(1);
  await tab.click('#stored-models .delete-model');
  await expect.poll(() => tab.texts('#stored-models li')).toEqual(['none']);
  expect(
    await tab.evaluate(
      async () =>
        (await navigator.storage
          .getDirectory?.()
          .then(async (d) => {
            const names: string[] = [];
            for await (const [name] of (await d.getDirectoryHandle('hearth-models')) as unknown as AsyncIterable<
              [string]
            >)
              names.push(name);
            return names;
          })
          .catch(() => [])) ?? [],
    ),
  ).toEqual([]);
});

test('installed and offline: the service worker serves the app, the model comes from the store, the conversation continues from IndexedDB', async ({
  site,
  baseURL,
}) => {
  const tab = await openApp(site);
  const manifest = await (await fetch(new URL('/manifest.webmanifest', baseURL))).json();
  expect(manifest).toMatchObject({ display: 'standalone', start_url: '/' });
  await tab.evaluate(() => navigator.serviceWorker.ready.then(() => {}));
  await expect.poll(() => tab.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
  // Long enough to be worth saving (the cache keeps prompts of 100 tokens and more).
  const long = `Here is what I need help with today. ${'I keep bread, rivers, stars, maps and tea in mind. '.repeat(12)}`;
  await ask(tab, long);
  await expect.poll(() => tab.texts('#stats')).toEqual([expect.stringContaining('tokens/s')]);
  await expect.poll(() => tab.evaluate(savedConversations)).toBe(1); // the KV save runs after the answer
  mkdirSync('docs', { recursive: true });
  await tab.screenshot('docs/app.png');

  await site.offline(true);
  await tab.reload();
  expect(await tab.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
  expect(await tab.evaluate(() => navigator.onLine)).toBe(false);
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await expect.poll(() => tab.texts('.msg.user')).toEqual([long.trim()]);
  expect(await tab.evaluate(() => (document.getElementById('source-kind') as HTMLSelectElement).value)).toBe('test');
  await tab.click('#load');
  await expect.poll(() => tab.texts('#load-status')).toEqual([expect.stringContaining('Ready')]);
  await ask(tab, 'And now?');
  await expect
    .poll(() => tab.texts('#stats'))
    .toEqual([expect.stringMatching(/\d+ cached \(restored from IndexedDB\)/)]);
  await site.offline(false);
});

test('a new version is applied only when the visitor accepts it: fetched past the HTTP cache, no redirect kept, every tab reloads onto it together', async ({
  site,
  baseURL,
}) => {
  // The site holds the app and nothing of the tests: no harness page or bundle is deployed or precached.
  expect(existsSync('dist/e2e')).toBe(false);
  expect(readdirSync('dist/assets').filter((f) => /harness/.test(f))).toEqual([]);
  const sw = await (await fetch(new URL('/sw.js', baseURL))).text();
  expect(sw).not.toMatch(/harness|\/e2e\//);

  const one = await openApp(site);
  await one.evaluate(() => navigator.serviceWorker.ready.then(() => {}));
  await expect.poll(() => one.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
  const two = await site.tab('/');
  await expect.poll(() => two.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await two.evaluate(() => void ((window as unknown as { before: boolean }).before = true));
  const caches = (tab: Tab) => tab.evaluate(() => globalThis.caches.keys());
  const [oldCache] = await caches(one);

  const since = (await servedLog(baseURL!)).length;
  await fetch(new URL('/__deploy', baseURL), { method: 'POST' });
  try {
    await one.evaluate(async () => void (await (await navigator.serviceWorker.getRegistration())!.update()));
    // The new version waits; the page offers it, and both tabs still run the old one.
    await expect.poll(() => one.visible('#update')).toBe(true);
    expect(await one.texts('#update')).toEqual([expect.stringContaining('A new version of Hearth is ready.')]);
    expect(await caches(one)).toEqual(expect.arrayContaining([oldCache]));
    expect(await two.evaluate(() => (window as unknown as { before?: boolean }).before)).toBe(true);
    // Its files came from the server, past the HTTP cache; the redirected one was not kept.
    const fetched = await servedLog(baseURL!, since);
    for (const path of ['/index.html', '/hearth/engine.worker.js']) {
      expect(fetched.filter((e) => e.path === path && e.reload)).not.toEqual([]);
    }
    const [newCache] = (await caches(one)).filter((k) => k !== oldCache);
    expect(
      await one.evaluate(
        async (name) => !!(await (await globalThis.caches.open(name)).match('/manifest.webmanifest')),
        newCache!,
      ),
    ).toBe(false);
    expect(
      await one.evaluate(
        async (name) => !!(await (await globalThis.caches.open(name)).match('/index.html')),
        newCache!,
      ),
    ).toBe(true);

    await one.click('#update-reload');
    // Every tab reloads onto the new version; the old cache is gone.
    // (An evaluation that meets a reload fails; the poll asks again.)
    await expect
      .poll(() => two.evaluate(() => (window as unknown as { before?: boolean }).before ?? false).catch(() => true))
      .toBe(false);
    await expect.poll(() => caches(one).catch(() => [])).toEqual([newCache]);
    await expect.poll(() => one.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
    expect(await one.visible('#update')).toBe(false);
    expect((await served(baseURL!, since)).filter((p) => p === '/sw.js').length).toBeGreaterThan(0);
  } finally {
    await fetch(new URL('/__deploy?undo', baseURL), { method: 'POST' });
  }
});

test('two tabs of the app share one engine: the second starts no worker, and chats on after the first closes', async ({
  site,
}) => {
  countWorkers(site);
  const one = await openApp(site);
  const two = await openApp(site);
  await expect.poll(() => two.texts('#engine-status')).toEqual([expect.stringContaining('shared by 2 tabs')]);
  expect(await workersStarted(two)).toBe(0);
  await two.click('#new-chat');
  await ask(two, 'Which flour for rye bread?');
  await ask(one, 'How do I feed a starter?');
  await expect
    .poll(() => one.texts('#engine-status'))
    .toEqual([expect.stringContaining('shared by 2 tabs, run by this one')]);
  await one.close();
  await ask(two, 'And for spelt?');
  expect(await two.texts('.msg.user')).toEqual(['Which flour for rye bread?', 'And for spelt?']);
  expect(await workersStarted(two)).toBeGreaterThan(0);
  await expect.poll(() => two.texts('#engine-status')).toEqual([expect.not.stringContaining('shared by')]);
});

// Images and audio: a model loaded with its projector (a URL beside the model's), the controls shown for what it reads.
// The microphone's test is in microphone-app.spec.ts (it needs launch options of its own).
const appPng = (name: string, seed: number): TestFile => ({ name, type: 'image/png', b64: b64(testPng(96, 96, seed)) });

test('a model that reads images: attached, pasted and dropped, thumbnails in the conversation and after a reload; a file that is not an image refused', async ({
  site,
}) => {
  const tab = await site.tab('/');
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  expect(await tab.visible('#composer .attach')).toBe(false);
  expect(await tab.visible('#record')).toBe(false);
  await loadWithProjector(
    tab,
    `/test-models/${PROJECTORS['gemma3-vision'].model}.gguf`,
    '/test-models/gemma3-vision.mmproj.gguf',
    'images',
  );
  expect(await tab.visible('#composer .attach')).toBe(true);
  expect(await tab.visible('#record')).toBe(false); // no audio for this model
  expect(await tab.evaluate(() => document.querySelector<HTMLInputElement>('#composer .attach + input')!.accept)).toBe(
    'image/png,image/jpeg,image/gif,image/bmp',
  );

  await putFiles(tab, APP_COMPOSER, 'input', [appPng('loaf.png', 1)]);
  await putFiles(tab, APP_COMPOSER, 'paste', [appPng('crumb.png', 2)]);
  await putFiles(tab, APP_COMPOSER, 'drop', [appPng('rye.png', 3)]);
  await expect.poll(() => drawnThumbnails(tab, APP_COMPOSER, '.pending .thumb')).toEqual([true, true, true]);
  // Not images: refused with a message, whatever their name or type says.
  await putFiles(tab, APP_COMPOSER, 'paste', [
    { name: 'notes.txt', type: 'text/plain', b64: b64(new TextEncoder().encode('rye')) },
    {
      name: 'logo.svg',
      type: 'image/svg+xml',
      b64: b64(new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>')),
    },
  ]);
  await expect
    .poll(() => tab.texts('#attach-status'))
    .toEqual([
      'Not attached: notes.txt is not a PNG, JPEG, GIF or BMP image; logo.svg is not a PNG, JPEG, GIF or BMP image.',
    ]);
  await tab.click('.pending .attachment:nth-child(3) .remove');
  await expect.poll(() => tab.count('.pending .thumb')).toBe(2);

  await sendAndWait(tab, 'Which breads are these?');
  expect(await tab.visible('.pending')).toBe(false);
  expect(await tab.texts('.msg.user')).toEqual(['Which breads are these?']);
  await expect.poll(() => drawnThumbnails(tab, APP_COMPOSER, '.msg.user .thumb')).toEqual([true, true]);
  expect(
    await tab.evaluate(() =>
      [...document.querySelectorAll('.msg.user .thumb')].map((c) => c.getAttribute('aria-label')),
    ),
  ).toEqual(['loaf.png', 'crumb.png']);
  expect(await tab.count('#chat img')).toBe(0);
  await expect.poll(() => tab.texts('#stats')).toEqual([expect.stringContaining('tokens/s')]);

  // Kept with the conversation: drawn again after a reload; edit and resend gives the text and the images back.
  await tab.reload();
  await expect.poll(() => drawnThumbnails(tab, APP_COMPOSER, '.msg.user .thumb')).toEqual([true, true]);
  expect(await tab.texts('.msg.user')).toEqual(['Which breads are these?']);
  // (The engine's status line, once it starts, may take two lines and move the page: click after it.)
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await tab.click('.msg.user .edit');
  expect(await tab.evaluate(() => (document.getElementById('prompt') as HTMLTextAreaElement).value)).toBe(
    'Which breads are these?',
  );
  await expect.poll(() => drawnThumbnails(tab, APP_COMPOSER, '.pending .thumb')).toEqual([true, true]);
});

test('a model that reads audio: an audio file attached, shown with its length, sent and kept as it was; an image refused', async ({
  site,
}) => {
  const tab = await site.tab('/');
  await expect.poll(() => tab.texts('#engine-status')).toEqual([expect.stringContaining('llama.cpp')]);
  await loadWithProjector(
    tab,
    `/test-models/${PROJECTORS['qwen2a-audio'].model}.gguf`,
    '/test-models/qwen2a-audio.mmproj.gguf',
    'audio',
  );
  expect(await tab.visible('#composer .attach')).toBe(true);
  expect(await tab.visible('#record')).toBe(true);
  expect(await tab.evaluate(() => document.querySelector<HTMLInputElement>('#composer .attach + input')!.accept)).toBe(
    'audio/wav,audio/mpeg,audio/flac',
  );

  await putFiles(tab, APP_COMPOSER, 'input', [
    { name: 'note.wav', type: 'audio/wav', b64: b64(testWav(1.5, 16000, 1)) },
  ]);
  await expect.poll(() => tab.texts('.pending .chip')).toEqual(['♪ note.wav · 1.5 s']);
  await putFiles(tab, APP_COMPOSER, 'drop', [appPng('loaf.png', 1)]);
  await expect
    .poll(() => tab.texts('#attach-status'))
    .toEqual(['Not attached: loaf.png is not WAV, MP3 or FLAC audio.']);
  await sendAndWait(tab, 'What do you hear?');
  expect(await tab.texts('.msg.user .chip')).toEqual(['♪ note.wav · 1.5 s']);
  expect(await tab.evaluate(storedClips)).toEqual([
    {
      name: 'note.wav',
      format: 'wav',
      riff: 'RIFFWAVE',
      channels: 1,
      rate: 16000,
      bits: 16,
      seconds: 1.5,
      sound: true,
    },
  ]);
});
