// Attaching files as a visitor does, for the app's and the widget's specs: through the composer's file input, a paste
// into its text field, a drop on it. Built in the page (File, DataTransfer, ClipboardEvent, DragEvent), which works
// the same under Playwright (Chromium) and puppeteer-core (Firefox). The files' bytes come from Node as base64.
import { expect } from './fixtures.ts';
import type { Tab } from './site.ts';

export interface TestFile {
  name: string;
  type: string;
  /** The bytes, base64. */
  b64: string;
}

/** Where the composer is: the widget's shadow root (its host's selector) or the document (null), and its parts. */
export interface Composer {
  host: string | null;
  /** The text field (pasted into). */
  text: string;
  /** The form (dropped on). */
  form: string;
}

export const WIDGET_COMPOSER: Composer = { host: 'hearth-chat', text: 'textarea', form: 'form' };
export const APP_COMPOSER: Composer = { host: null, text: '#prompt', form: '#composer' };

export const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

/** Puts `files` into the composer by `how`; returns whether the page took the event (preventDefault). */
export function putFiles(
  tab: Tab,
  composer: Composer,
  how: 'input' | 'paste' | 'drop',
  files: TestFile[],
): Promise<boolean> {
  return tab.evaluate(
    ({ composer, how, files }) => {
      const root: ParentNode = composer.host ? document.querySelector(composer.host)!.shadowRoot! : document;
      const dt = new DataTransfer();
      for (const f of files) {
        dt.items.add(new File([Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0))], f.name, { type: f.type }));
      }
      if (how === 'input') {
        // The hidden input beside the attach button, as the file picker leaves it.
        const input = root.querySelector<HTMLInputElement>('.attach + input[type=file]');
        if (!input) throw new Error('no attach input');
        input.files = dt.files;
        input.dispatchEvent(new Event('change', { bubbles: true }));
        return true;
      }
      // Firefox gives a constructed event a copy of the DataTransfer without its files: the event carries this one.
      const withData = <E extends Event>(e: E, key: 'clipboardData' | 'dataTransfer'): E =>
        Object.defineProperty(e, key, { value: dt });
      if (how === 'paste') {
        const e = withData(
          new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true, composed: true }),
          'clipboardData',
        );
        root.querySelector(composer.text)!.dispatchEvent(e);
        return e.defaultPrevented;
      }
      const form = root.querySelector(composer.form)!;
      let taken = false;
      for (const type of ['dragenter', 'dragover', 'drop']) {
        const e = withData(
          new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true, composed: true }),
          'dataTransfer',
        );
        form.dispatchEvent(e);
        if (type === 'drop') taken = e.defaultPrevented;
      }
      return taken;
    },
    { composer, how, files },
  );
}

/** For each canvas the selector matches in the composer's root: whether an image was drawn on it (not blank). */
export function drawnThumbnails(tab: Tab, composer: Composer, selector: string): Promise<boolean[]> {
  return tab.evaluate(
    ({ host, selector }) => {
      const root: ParentNode = host ? document.querySelector(host)!.shadowRoot! : document;
      return [...root.querySelectorAll<HTMLCanvasElement>(selector)].map((c) => {
        if (c.width < 2 || c.height < 2) return false;
        const pixels = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
        return pixels.some((v, i) => i % 4 === 3 && v > 0);
      });
    },
    { host: composer.host, selector },
  );
}

/** Records the timings of every chunk the engine streams to the page, on the widget's engine (window.timings). */
export function recordTimings(tab: Tab): Promise<void> {
  return tab.evaluate(() => {
    type Create = (p: unknown) => Promise<AsyncIterable<{ timings?: Record<string, unknown> }>>;
    const engine = (
      document.querySelector('hearth-chat') as unknown as { engine: { chat: { completions: { create: Create } } } }
    ).engine;
    const completions = engine.chat.completions;
    const create = completions.create.bind(completions);
    const seen: Array<Record<string, unknown>> = [];
    (window as unknown as { timings: typeof seen }).timings = seen;
    completions.create = async (p) => {
      const stream = await create(p);
      return (async function* () {
        for await (const chunk of stream) {
          if (chunk.timings) seen.push(chunk.timings);
          yield chunk;
        }
      })();
    };
  });
}

export const timings = (tab: Tab) =>
  tab.evaluate(() => (window as unknown as { timings: Array<Record<string, unknown>> }).timings);

/** The app with a model loaded by URL with its projector; `reads` is what the status line says it reads. */
export async function loadWithProjector(tab: Tab, model: string, projector: string, reads: 'images' | 'audio') {
  await tab.evaluate(() => {
    const kind = document.getElementById('source-kind') as HTMLSelectElement;
    kind.value = 'url';
    kind.dispatchEvent(new Event('change'));
  });
  await tab.fill('#model-url', model);
  await tab.fill('#projector-url', projector);
  await tab.click('#load');
  await expect
    .poll(() => tab.texts('#load-status'))
    .toEqual([expect.stringMatching(new RegExp(`^Ready: .*Reads ${reads}\\.$`))]);
}

/**
 * Sends what the app's composer holds; once the answer streams (the media read, the prompt decoded), stops it. The test
 * models write gibberish without an end: left alone, an answer runs to the end of the context, a minute on a 2-core
 * machine, which these tests do not need.
 */
export async function sendAndWait(tab: Tab, text: string) {
  const before = await tab.count('.msg.assistant');
  await tab.fill('#prompt', text);
  await tab.press('#prompt', 'Enter');
  await expect.poll(() => tab.count('.msg.assistant')).toBe(before + 1);
  const sendable = () => tab.evaluate(() => !(document.getElementById('send') as HTMLButtonElement).disabled);
  await expect
    .poll(async () => (await sendable()) || ((await tab.texts('.msg.assistant')).at(-1)?.length ?? 0) > 0)
    .toBe(true);
  // A DOM click, not a pointer's: the answer may end in between, and a click on the disabled button then is nothing.
  await tab.evaluate(() => (document.getElementById('stop') as HTMLButtonElement).click());
  await expect.poll(sendable).toBe(true);
  expect(await tab.count('.msg.error')).toBe(0);
}

/** The audio clips kept in the conversations (IndexedDB), each as its WAV header says (runs in the page). */
export async function storedClips() {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open('hearth-chat');
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
  const all = await new Promise<Array<{ messages: Array<{ content: unknown }> }>>((resolve) => {
    const req = db.transaction('conversations').objectStore('conversations').getAll();
    req.onsuccess = () => resolve(req.result);
  });
  db.close();
  const parts = all
    .flatMap((c) => c.messages)
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((p): p is { type: 'input_audio'; input_audio: { data: File; format: string } } => p.type === 'input_audio');
  return Promise.all(
    parts.map(async ({ input_audio: { data, format } }) => {
      const d = new DataView(await data.arrayBuffer());
      const tag = (at: number) => String.fromCharCode(...new Uint8Array(d.buffer, at, 4));
      let peak = 0;
      for (let at = 44; at + 2 <= d.byteLength; at += 2) peak = Math.max(peak, Math.abs(d.getInt16(at, true)));
      return {
        name: data.name.replace(/\d[\d-]*/, 'T'),
        format,
        riff: tag(0) + tag(8),
        channels: d.getUint16(22, true),
        rate: d.getUint32(24, true),
        bits: d.getUint16(34, true),
        seconds: d.getUint32(40, true) / d.getUint32(28, true),
        sound: peak > 100,
      };
    }),
  );
}
