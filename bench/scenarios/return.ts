// npm run bench -- return [--json] [--reps N]: N runs (default 3), then the median of each figure.
// A returning visitor: the benchmark model (Qwen2.5-0.5B shapes, Q8_0, 531 MB) served by a local server throttled to
// 100 Mbit/s that plays the Hugging Face Hub (sizes and sha256 from its API), in Chromium with a profile on disk, at
// 2 threads. The conversation: a ~1,000-token system prompt and 20 turns (~2,400 tokens).
//
// First visit: page open → first token of turn 21 — the engine starts, the model is downloaded into OPFS and checked,
// read into the wasm heap, and the whole conversation is read (prefill). The reply is saved to IndexedDB.
// Returning visit: the page is closed and opened again in the same profile; page open → first token of the next
// turn — the model comes from OPFS (no request reaches the server), the conversation's state from IndexedDB, and only
// the new question is read.
// First visit with a shipped prompt state: a new profile, the same first visit, with the state of everything before the
// last question (2,4xx tokens, as a site's long system prompt would be) written beforehand in Node (exportPrompt) and
// served beside the model by the same throttled server: the model and the state download, the state is restored, and
// only the last question is read.
import { statSync } from 'node:fs';
import { ensureModel } from '../../test/fixtures/models.ts';
import { ensurePromptState } from '../../test/fixtures/prompt-states.ts';
import { ModelServer } from '../../test/model-server.ts';
import type { ChatMessage } from '../../src/types.ts';
import { openBenchPage } from '../browser.ts';
import { median, MUSEUM_SYSTEM, museumQuestion, round, type ScenarioOptions } from '../common.ts';

const THREADS = 2;
const N_CTX = 4096;
const TURNS = 20;
const REPLY_TOKENS = 16;
const MBIT = 100;
const CONVERSATION = 'bench-return';
const REPLY = 'The exhibit is in the east wing, room four; start there and keep the map for later.';

type Visit = Awaited<ReturnType<import('../page.ts').Bench['visit']>>;

/** `--reps` runs (default 3), each in new profiles: each run's row, then the median of every figure. */
export async function returnVisit(opts: ScenarioOptions) {
  const rows: Array<Record<string, number>> = [];
  for (let rep = 0; rep < opts.reps; rep++) {
    if (opts.reps > 1) opts.log(`run ${rep + 1} of ${opts.reps}`);
    rows.push(await oneRun(opts));
  }
  if (rows.length === 1) return rows;
  const summary = Object.fromEntries(Object.keys(rows[0]!).map((k) => [k, median(rows.map((r) => r[k]!))]));
  return [...rows, summary];
}

async function oneRun(opts: ScenarioOptions): Promise<Record<string, number>> {
  const path = await ensureModel('bench-qwen2.5-0.5b');
  const size = statSync(path).size;
  const server = await ModelServer.start();
  server.addHub('bench/qwen2.5-0.5b-GGUF', 'main', { 'bench-qwen2.5-0.5b.gguf': { path } });
  server.bytesPerSecond = (MBIT * 1e6) / 8;
  const source = { hf: { repo: 'bench/qwen2.5-0.5b-GGUF', file: 'bench-qwen2.5-0.5b.gguf' } };

  const messages: ChatMessage[] = [{ role: 'system', content: MUSEUM_SYSTEM }];
  for (let i = 0; i < TURNS; i++) {
    messages.push({ role: 'user', content: museumQuestion(i) }, { role: 'assistant', content: REPLY });
  }
  messages.push({ role: 'user', content: museumQuestion(TURNS) });
  // Written before the browser starts (both cores), once: kept in .cache/models until the model or the build changes.
  const statePath = await ensurePromptState(
    'bench-return',
    'bench-qwen2.5-0.5b',
    messages.slice(0, -1),
    'f32',
    THREADS,
  );
  const stateF16 = await ensurePromptState(
    'bench-return-f16',
    'bench-qwen2.5-0.5b',
    messages.slice(0, -1),
    'f16',
    THREADS,
  );
  const stateUrl = server.add('/bench/return.hearth-state', { path: statePath });
  const stateF16Url = server.add('/bench/return-f16.hearth-state', { path: stateF16 });

  const b = await openBenchPage({ profile: true });
  try {
    const first: Visit = await b.call(
      'visit',
      source,
      server.url,
      THREADS,
      N_CTX,
      messages,
      REPLY_TOKENS,
      CONVERSATION,
    );
    report(opts, 'first visit', first, size);
    const modelRequests = server.log.length;

    await b.reopen();
    const next = [
      ...messages,
      { role: 'assistant' as const, content: first.text },
      { role: 'user' as const, content: museumQuestion(TURNS + 1) },
    ];
    const back: Visit = await b.call('visit', source, server.url, THREADS, N_CTX, next, REPLY_TOKENS, CONVERSATION);
    report(opts, 'returning visit', back, size);
    if (server.log.length !== modelRequests) {
      throw new Error(`the returning visit made ${server.log.length - modelRequests} requests to the model server`);
    }
    if (back.timings.cache_source !== 'indexeddb') {
      throw new Error(`the returning visit's prompt came from ${back.timings.cache_source}, not IndexedDB`);
    }

    const shipped = await shippedVisit(
      opts,
      'first visit with a shipped prompt state',
      source,
      server.url,
      messages,
      stateUrl,
      size,
    );
    const shippedF16 = await shippedVisit(
      opts,
      'first visit with a shipped prompt state in f16',
      source,
      server.url,
      messages,
      stateF16Url,
      size,
    );
    for (const v of [shipped, shippedF16]) {
      if (v.text !== first.text) opts.log(`  (the answers differ: "${first.text}" / "${v.text}")`);
    }
    const stateTokens = shipped.info.model!.promptState!.tokens;
    const perThousand = (p: string) => round(((statSync(p).size / stateTokens) * 1000) / 1e6, 2);
    // From the end of the model's download to the first token: cold, checking and reading the model and prefilling
    // the whole prompt; with the state, checking the model, downloading the state, reading the model, restoring the
    // state and reading the last question.
    const afterDownload = (v: Visit) => v.firstMs - v.phases.download!.end;

    const read = back.phases.load!;
    const restore = back.phases.restore;
    const row = {
      model_mb: round(size / 1e6, 1),
      mbit_per_s: MBIT,
      first_visit_ms: round(first.firstMs, 0),
      first_download_ms: round(span(first, 'download'), 0),
      first_verify_ms: round(span(first, 'verify'), 0),
      first_prefill_tokens: first.timings.prompt_n,
      first_prefill_ms: round(first.timings.prompt_ms, 0),
      return_ms: round(back.firstMs, 0),
      ratio: round(first.firstMs / back.firstMs, 1),
      return_engine_start_ms: round(back.engineMs - back.scriptMs, 0),
      return_model_read_ms: round(read.end - read.start, 0),
      model_read_mb_per_s: round(size / 1e6 / ((read.end - read.start) / 1000), 0),
      restore_ms: round(restore ? restore.end - restore.start : 0, 0),
      return_cached_tokens: back.timings.cache_n,
      return_prefill_tokens: back.timings.prompt_n,
      first_visit_with_state_ms: round(shipped.firstMs, 0),
      state_ratio: round(first.firstMs / shipped.firstMs, 2),
      state_tokens: stateTokens,
      state_mb: round(statSync(statePath).size / 1e6, 1),
      state_download_ms: round(span(shipped, 'prompt-state-download'), 0),
      state_prefill_tokens: shipped.timings.prompt_n,
      after_download_cold_ms: round(afterDownload(first), 0),
      after_download_with_state_ms: round(afterDownload(shipped), 0),
      state_after_download_ratio: round(afterDownload(first) / afterDownload(shipped), 1),
      first_visit_with_f16_state_ms: round(shippedF16.firstMs, 0),
      f16_state_ratio: round(first.firstMs / shippedF16.firstMs, 2),
      after_download_with_f16_state_ms: round(afterDownload(shippedF16), 0),
      f16_state_after_download_ratio: round(afterDownload(first) / afterDownload(shippedF16), 1),
      state_mb_per_1000_tokens_f32: perThousand(statePath),
      state_mb_per_1000_tokens_f16: perThousand(stateF16),
    };
    return row;
  } finally {
    await b.close();
    await server.stop();
  }
}

/** A first visit by a new visitor (a new profile) to a page that ships `stateUrl` beside the model. */
async function shippedVisit(
  opts: ScenarioOptions,
  name: string,
  source: { hf: { repo: string; file: string } },
  hub: string,
  messages: ChatMessage[],
  stateUrl: string,
  size: number,
): Promise<Visit> {
  const b = await openBenchPage({ profile: true });
  let v: Visit;
  try {
    v = await b.call('visit', source, hub, THREADS, N_CTX, messages, REPLY_TOKENS, CONVERSATION, stateUrl);
  } finally {
    await b.close();
  }
  report(opts, name, v, size);
  if (v.timings.cache_source !== 'prompt-state') {
    throw new Error(`the shipped state was not used (${v.timings.cache_source}): ${v.info.model?.warnings}`);
  }
  return v;
}

const span = (v: Visit, phase: string) => (v.phases[phase] ? v.phases[phase].end - v.phases[phase].start : 0);

function report(opts: ScenarioOptions, name: string, v: Visit, size: number) {
  const read = v.phases.load;
  const lines = [
    `${name}: first token ${v.firstMs.toFixed(0)} ms after the page opened (${v.info.build} build, ${v.info.threads} threads)`,
    `  page scripts ${v.scriptMs.toFixed(0)} ms, engine start (worker, wasm) ${(v.engineMs - v.scriptMs).toFixed(0)} ms`,
    v.phases.download
      ? `  download ${span(v, 'download').toFixed(0)} ms (${(size / 1e6 / (span(v, 'download') / 1000)).toFixed(1)} MB/s), ` +
        `sha256 check ${span(v, 'verify').toFixed(0)} ms`
      : '  model from OPFS: no download',
    ...(v.phases['prompt-state-download']
      ? [
          `  prompt state download ${span(v, 'prompt-state-download').toFixed(0)} ms ` +
            `(${(v.phases['prompt-state-download'].total / 1e6).toFixed(1)} MB, after the model's), read and checked ` +
            `${span(v, 'prompt-state-restore').toFixed(0)} ms`,
        ]
      : []),
    `  model read into the wasm heap ${read ? (read.end - read.start).toFixed(0) : '?'} ms` +
      (read ? ` (${(size / 1e6 / ((read.end - read.start) / 1000)).toFixed(0)} MB/s)` : '') +
      `; load() returned after ${(v.loadedMs - v.engineMs).toFixed(0)} ms`,
    `  request: ${v.usage.prompt_tokens} prompt tokens, ${v.timings.cache_n} from ${v.timings.cache_source}` +
      (v.phases.restore ? ` (restore ${span(v, 'restore').toFixed(0)} ms)` : '') +
      `, ${v.timings.prompt_n} read in ${v.timings.prompt_ms.toFixed(0)} ms; first token ${(v.firstMs - v.loadedMs).toFixed(0)} ms after load()`,
  ];
  for (const l of lines) opts.log(l);
}
