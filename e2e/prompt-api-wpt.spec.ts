// The Prompt API's and the Writing Assistance APIs' own web-platform-tests (e2e/wpt/, written by others) against
// Hearth's LanguageModel, Summarizer, Writer and Rewriter in each browser, one page per file (e2e/prompt-api-wpt.html) on a test model. Each file's results are held to
// e2e/wpt/expectations.json: a test listed there as passing in this browser that does not pass fails the run; one
// that passes and is not listed is reported (HEARTH_WPT_WRITE=1 writes the file from a run). Every result goes to
// .cache/reports/wpt-<browser>.json.
//
// Every file that can run here, in all three browsers, is `npm run test:wpt` (and the full tier); `npm test` runs the
// CORE files in Chromium and a few of them in Firefox and WebKit (CI's 90 minutes: every file takes a page, an engine
// and a model load, 2–4 s, and the whole set 2–4 minutes a browser).
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, type HarnessPage, test } from './fixtures.ts';

const WPT = join(import.meta.dirname, 'wpt');
const EXPECTATIONS = join(WPT, 'expectations.json');

/** Files that cannot run here, and why. */
const CANNOT_RUN: Array<[RegExp, string]> = [
  [/iframe/, "an iframe on another site and the 'language-model' permissions policy: wptserve's hosts"],
  [/garbage-collection|-gc\./, 'a gc() the page can call (a browser flag of the WPT runners)'],
  [/multimodal/, "the web-platform-tests' media files (/images, /media) and a model that reads them"],
  [/tool-use/, "tools, and Chromium's echo model whose replies the tests expect"],
  [/prompt-context-destroyed|context\/destroyed/, "an iframe's session"],
];

/** The APIs whose tests run: the Prompt API's and the Writing Assistance APIs'. */
const APIS = ['language-model', 'summarizer', 'writer', 'rewriter'];

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'resources' ? [] : testFiles(path);
    return /\.window\.js$/.test(name) ? [relative(WPT, path)] : [];
  });
}

const files = APIS.flatMap((api) => testFiles(join(WPT, 'ai', api)))
  .filter((f) => !CANNOT_RUN.some(([pattern]) => pattern.test(f)))
  .sort();

/** What `npm test` runs: one file for each part of the API in Chromium; in the other two, where their browsers differ
 * (their streams, DOMExceptions, user activation, IndexedDB for a kept session). */
const CORE = [
  'language-model-abort',
  'language-model-append',
  'language-model-availability-available',
  'language-model-clone',
  'language-model-create',
  'language-model-destroy',
  'language-model-params',
  'language-model-quota-exceeded',
  'language-model-response-json-schema',
  'prompt/context/overflow',
  'prompt/context/usage',
  'prompt/prompt',
  'prompt/prompt-concurrent',
  'prompt/rejections',
  'prompt/streaming/prompt-streaming',
  'prompt/streaming/prompt-streaming-post-abort',
  'summarizer/summarizer-summarize',
  'writer/writer-write',
  'rewriter/rewriter-rewrite',
];
const CORE_ELSEWHERE = ['language-model-create', 'language-model-quota-exceeded', 'prompt/streaming/prompt-streaming'];
const everyFile = process.env.HEARTH_WPT === '1' || process.env.HEARTH_E2E_FULL === '1';
const named = (f: string) => f.replace(/^ai\/(language-model\/)?/, '').replace(/\.tentative\.https\.window\.js$/, '');
const inTier = (f: string, browser: string) =>
  everyFile || (browser === 'chromium' ? CORE : CORE_ELSEWHERE).includes(named(f));

interface Results {
  status: number;
  message: string | null;
  tests: Array<{ name: string; status: number; message: string | null }>;
}
declare global {
  interface Window {
    wptResults?: Results;
  }
}

/**
 * The harness's timeout for a file, as a multiple of its own (60 s with META timeout=long): 1, and less for a file
 * whose test cannot end here and would wait out the whole of it — language-model-prompt's contextoverflow case
 * prompts a text sized by Chrome's token counts to just overflow the window, which by this engine's counts fits
 * (so no event comes, and the test waits for it).
 */
const TIMEOUT: Record<string, string> = { 'ai/language-model/language-model-prompt.tentative.https.window.js': '0.25' };

/** The runner page for `file`: its META scripts (resolved against its address) and timeout, as wptserve reads them. */
function pageFor(file: string): string {
  const source = readFileSync(join(WPT, file), 'utf8');
  const at = new URL(`/wpt/${file}`, 'http://wpt');
  const query = new URLSearchParams({ test: at.pathname, timeout: TIMEOUT[file] ?? '1' });
  for (const m of source.matchAll(/^\/\/ META: script=(.+)$/gm))
    query.append('script', new URL(m[1]!.trim(), at).pathname);
  if (/^\/\/ META: timeout=long$/m.test(source)) query.set('long', '1');
  return `/e2e/prompt-api-wpt.html?${query}`;
}

/** Where testdriver's bless() button is (e2e/wpt-support/testdriver.js). */
const BLESS_AT = [20, 20] as const;

/**
 * Runs the page to its results. testdriver's bless() waits for a click on its button, made here by the driver: a
 * real user activation. Where the driver shows the console, the page is only watched (an evaluate() would give it a
 * user activation, which the user-activation tests check it has not had); WebDriver's, in WebKit, gives none.
 */
async function run(harness: HarnessPage, url: string): Promise<Results> {
  if (harness.onConsole) {
    const done = new Promise<Results>((resolve, reject) => {
      harness.onConsole!((text) => {
        if (text === 'wpt:bless') harness.tap(...BLESS_AT).catch(reject);
        else if (text.startsWith('wpt:results ')) resolve(JSON.parse(text.slice('wpt:results '.length)) as Results);
      });
    });
    await harness.goto(url);
    return done;
  }
  await harness.goto(url);
  for (;;) {
    const state = await harness.evaluate(() => ({
      results: window.wptResults ?? null,
      bless: document.querySelector('.wpt-bless') !== null,
    }));
    if (state.results) return state.results;
    if (state.bless) await harness.tap(...BLESS_AT);
    else await new Promise((r) => setTimeout(r, 100));
  }
}

const STATUS = ['PASS', 'FAIL', 'TIMEOUT', 'NOTRUN', 'PRECONDITION_FAILED'];
// Playwright's trace takes snapshots of the page by running script in it, which gives Chromium's page a user
// activation that the user-activation tests check it has not had.
test.use({ trace: 'off' });

const expected = JSON.parse(readFileSync(EXPECTATIONS, 'utf8')) as Record<string, Record<string, string[]>>;
const seen: Record<string, Results> = {};

for (const file of files) {
  test.describe(() => {
    // Decided on the worker's browser alone, before the test's fixtures: a skipped file starts no page (in WebKit a
    // driver session each, which is slow and, 50 times over, once in a while hangs).
    test.skip(({ engineBrowser }) => !inTier(file, engineBrowser), 'npm run test:wpt runs it');
    test(`web-platform-tests: ${file}`, async ({ harness, engineBrowser }) => {
      test.setTimeout(300_000);
      const results = await run(harness, pageFor(file));
      seen[file] = results;
      const passed = results.tests.filter((t) => t.status === 0).map((t) => t.name);
      const want = expected[file]?.[engineBrowser] ?? [];
      const fresh = passed.filter((n) => !want.includes(n));
      if (fresh.length) console.log(`[wpt] ${file}: passes now, not in expectations.json: ${fresh.join(' | ')}`);
      for (const t of results.tests.filter((t) => t.status !== 0)) {
        console.log(`[wpt] ${file}: ${STATUS[t.status]} ${t.name}: ${t.message ?? ''}`.slice(0, 400));
      }
      expect(
        want.filter((n) => !passed.includes(n)),
        'tests expected to pass (e2e/wpt/expectations.json)',
      ).toEqual([]);
    });
  });
}

test.afterAll(({ engineBrowser }) => {
  const reports = join(import.meta.dirname, '..', '.cache', 'reports');
  mkdirSync(reports, { recursive: true });
  const summary = Object.fromEntries(
    Object.entries(seen).map(([file, r]) => [
      file,
      { passed: r.tests.filter((t) => t.status === 0).length, total: r.tests.length, harness: r.status },
    ]),
  );
  writeFileSync(join(reports, `wpt-${engineBrowser}.json`), JSON.stringify({ summary, results: seen }, null, 2));
  if (process.env.HEARTH_WPT_WRITE === '1') {
    for (const [file, r] of Object.entries(seen)) {
      expected[file] = { ...expected[file], [engineBrowser]: r.tests.filter((t) => t.status === 0).map((t) => t.name) };
    }
    const sorted = Object.fromEntries(Object.entries(expected).sort(([a], [b]) => a.localeCompare(b)));
    writeFileSync(EXPECTATIONS, `${JSON.stringify(sorted, null, 2)}\n`);
  }
});
