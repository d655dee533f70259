// npm run bench -- speculative [--json] [--reps N] [--engine cpu|gpu] [--browser]
// Speculative decoding on a rewrite task: the model is asked to rewrite a 121-word text given in the prompt with a word
// in every EDIT_EVERY changed, and writes the text back unchanged. The model is bench-qwen2.5-0.5b-recite (Qwen2.5-0.5B's
// shapes, Q8_0, random weights whose permuted output recites RECITE_TEXT after any prompt): with random weights no real
// model's agreement exists, so agreement is made by construction and the figure to read is the speed at the acceptance
// rate measured beside it:
// - n-gram guesses ({ kind: 'ngram' }) from the prompt's copy agree but around the edits;
// - the draft model bench-qwen2.5-draft-recite (qwen2's vocabulary, 4 layers of 256, Q8_0: 8.6% of the parameters a
//   token reads, as Qwen2.5-0.5B beside Qwen2.5-7B is 6.5%) recites the text with a miss after 21 of its words, so
//   that about 7 of 10 guesses are taken at 4 a step.
// Decode tokens/s without guesses, with n-gram guesses (n_draft 4 and 8) and with the draft's (n_draft 4), the same
// greedy reply each time, on the CPU engine (the threaded build, 2 threads) and the GPU engine (Dawn for Node's adapter:
// lavapipe here), in one Node process — with --browser the CPU engine in headless Chromium instead (the build a page
// gets: relaxed SIMD); medians of --reps (default 3). In Node, where the time goes: a step's decode by its tokens, and
// the draft's time a step.
// Then, on the CPU engine, a reload: a ~1,200-token conversation (RESUMED_TURNS earlier rewrites) saved with the
// draft's cells beside the model's, and the next turn after a reload, with the draft's guesses and without (first
// token, decode speed, what the draft read). And why the draft's cells are saved rather than read again: the time the
// draft alone takes to read the conversation (the draft model loaded on its own, nothing cached) against the time its
// cells take to restore (Node's IndexedDB is fake-indexeddb, in memory: the engine's side of a restore).
import 'fake-indexeddb/auto';
import { chooseBuild } from '../../src/backends/llamacpp/worker/simd.ts';
import { createNodeEngine, type NodeEngine } from '../../src/node.ts';
import { TestHooks } from '../../src/backends/llamacpp/test-hooks.ts';
import type { BuildVariant, ChatMessage, SpeculativeOptions } from '../../src/types.ts';
import { ensureModel, RECITE_TEXT } from '../../test/fixtures/models.ts';
import { installDawn } from '../../test/webgpu/dawn.ts';
import { median, round, type ScenarioOptions } from '../common.ts';
import { NO_CACHE, type RunResult, timedChat } from '../timed-chat.ts';
import { rerunUnderDawn } from './webgpu.ts';
import { openBenchPage } from '../browser.ts';

const MODEL = 'bench-qwen2.5-0.5b-recite';
const DRAFT = 'bench-qwen2.5-draft-recite';
const N_CTX = 2048;
const EDIT_EVERY = 10;
const REPLY = 160;
const KINDS: Array<[string, SpeculativeOptions]> = [
  ['ngram4', { kind: 'ngram', n_draft: 4 }],
  ['ngram8', { kind: 'ngram', n_draft: 8 }],
  ['draft4', { kind: 'draft', n_draft: 4 }],
];
/** Earlier rewrites in the conversation a reload resumes. */
const RESUMED_TURNS = 4;

/** The text with every EDIT_EVERY-th word (from the 5th) replaced: what the user asks to have rewritten. */
function edited(): string {
  const swaps = ['purple', 'seven', 'engine', 'tiger', 'velvet', 'rocket', 'marble', 'pepper', 'violin', 'canyon'];
  return RECITE_TEXT.split(' ')
    .map((w, i) => (i % EDIT_EVERY === 4 ? swaps[Math.floor(i / EDIT_EVERY) % swaps.length]! : w))
    .join(' ');
}

const SYSTEM: ChatMessage = {
  role: 'system',
  content: 'You rewrite texts, keeping their words unless asked otherwise.',
};
const ASK: ChatMessage = {
  role: 'user',
  content: `Rewrite this text, correcting the words that do not fit:\n${edited()}`,
};
const MESSAGES: ChatMessage[] = [SYSTEM, ASK];
/** A conversation of RESUMED_TURNS rewrites, then the next one. */
const RESUMED: ChatMessage[] = [
  SYSTEM,
  ...Array.from({ length: RESUMED_TURNS }, () => [ASK, { role: 'assistant' as const, content: RECITE_TEXT }]).flat(),
  { role: 'user', content: `Once more:\n${edited()}` },
];

const decodeTps = (r: RunResult) => (r.decodeMs > 0 ? ((r.genTokens - 1) / r.decodeMs) * 1000 : 0);
const acceptance = (r: RunResult) => (r.timings?.draft_n_accepted ?? 0) / Math.max(1, r.timings?.draft_n ?? 0);

/** One engine with the model and its draft loaded, timed from the caller's side. */
interface Runner {
  label: string;
  run(speculative: SpeculativeOptions | null, maxTokens: number): Promise<RunResult>;
  /** The mean decode of a step of `n` tokens and the draft's time a step so far (Node only: its scheduler's profile). */
  steps?(n: number): { steps: number; ms: number; draftMs: number; all: number };
  close(): Promise<void>;
}

async function nodeRunner(which: 'cpu' | 'gpu', variant: BuildVariant, path: string, draft: string): Promise<Runner> {
  const engine: NodeEngine = await createNodeEngine({ variant, threads: 2, cache: NO_CACHE, modelsDir: null });
  await engine.load({ path }, { nCtx: N_CTX, draft: { path: draft } });
  const info = await engine.info();
  const hooks = new TestHooks(engine.engine);
  return {
    label: `${which} in Node: ${info.gpu ? info.gpu.adapter : `${info.threads} threads, ${info.build}`}`,
    run: (speculative, maxTokens) => timedChat(engine, MESSAGES, maxTokens, undefined, undefined, { speculative }),
    steps: (n) => ({
      ...(hooks.profile.byTokens[n] ?? { steps: 0, ms: 0 }),
      draftMs: hooks.draftProfile!.ms,
      all: hooks.profile.steps,
    }),
    close: async () => engine.terminate(),
  };
}

async function browserRunner(): Promise<Runner> {
  const b = await openBenchPage();
  const info = await b.call(
    'loadHearth',
    `/test-models/${MODEL}.gguf`,
    2,
    N_CTX,
    null,
    null,
    'auto',
    null,
    null,
    `/test-models/${DRAFT}.gguf`,
  );
  return {
    label: `cpu in Chromium: ${info.threads} threads, ${info.build}`,
    run: (speculative, maxTokens) => b.call('runHearth', MESSAGES, maxTokens, null, speculative),
    close: () => b.close(),
  };
}

export async function speculative(opts: ScenarioOptions): Promise<Array<Record<string, number>>> {
  const engines: Array<'cpu' | 'gpu'> = opts.engine ? [opts.engine] : ['cpu', 'gpu'];
  if (engines.includes('gpu') && !(globalThis.navigator as { gpu?: unknown } | undefined)?.gpu) {
    if (!process.env.HEARTH_WEBGPU) rerunUnderDawn();
    await installDawn();
  }
  const path = await ensureModel(MODEL);
  const draft = await ensureModel(DRAFT);
  const row: Record<string, number> = { reps: opts.reps, edit_every: EDIT_EVERY };
  for (const which of engines) {
    const variant = which === 'gpu' ? 'webgpu' : chooseBuild(true, opts.simd ?? 'auto', '2 threads').variant;
    const runner =
      which === 'cpu' && opts.browser ? await browserRunner() : await nodeRunner(which, variant, path, draft);
    try {
      opts.log(`${runner.label}; ${MODEL} with ${DRAFT}`);
      // Where a run's time went (Node): the mean decode of a step of 1 token and of n_draft + 1, the draft's time a
      // step.
      let steps = { one: 0, full: 0, draftMs: 0 };
      const runs = async (speculative: SpeculativeOptions | null) => {
        const full = 1 + (speculative?.n_draft ?? 0);
        const before = [runner.steps?.(1), runner.steps?.(full)];
        const out: RunResult[] = [];
        for (let rep = 0; rep < opts.reps; rep++) out.push(await runner.run(speculative, REPLY));
        const [one, all] = [runner.steps?.(1), runner.steps?.(full)];
        const mean = (a = { steps: 0, ms: 0 }, b = { steps: 0, ms: 0 }) =>
          a.steps > b.steps ? (a.ms - b.ms) / (a.steps - b.steps) : 0;
        steps = {
          one: mean(one, before[0]),
          full: mean(all, before[1]),
          draftMs: all ? (all.draftMs - before[1]!.draftMs) / Math.max(1, all.all - before[1]!.all) : 0,
        };
        return out;
      };
      // Warm-up: compute buffers and pipelines, of the model and of the draft.
      await runner.run({ kind: 'draft' }, 8);
      const plain = await runs(null);
      if (plain[0]!.text !== RECITE_TEXT) throw new Error(`the model did not recite its text: ${plain[0]!.text}`);
      const base = median(plain.map(decodeTps));
      row[`${which}_plain_tps`] = round(base);
      if (runner.steps) row[`${which}_step1_ms`] = round(steps.one);
      opts.log(
        `  without guesses: ${round(base)} tok/s (${plain[0]!.genTokens} tokens` +
          (runner.steps ? `; a step ${round(steps.one)} ms)` : ')'),
      );
      // On a software adapter (lavapipe) a step costs its tokens' arithmetic on the CPU: 8 guesses a step take minutes.
      for (const [name, spec] of KINDS.filter(([n]) => which === 'cpu' || n !== 'ngram8')) {
        const guessed = await runs(spec);
        if (guessed.some((r) => r.text !== plain[0]!.text)) throw new Error(`the reply with ${name} guesses differs`);
        const tps = median(guessed.map(decodeTps));
        const t = guessed[0]!.timings!;
        const key = `${which}_${name}`;
        row[`${key}_tps`] = round(tps);
        row[`${key}_speedup`] = round(tps / base);
        row[`${key}_acceptance`] = round(acceptance(guessed[0]!));
        if (runner.steps) row[`${key}_step_ms`] = round(steps.full);
        if (runner.steps && spec.kind === 'draft') row[`${key}_draft_ms`] = round(steps.draftMs);
        opts.log(
          `  ${name} (${spec.kind}, ${spec.n_draft} a step): ${round(tps)} tok/s (${row[`${key}_speedup`]}x), ` +
            `${t.draft_n_accepted} of ${t.draft_n} guesses taken (${row[`${key}_acceptance`]})` +
            (runner.steps ? `; a step of ${spec.n_draft! + 1} tokens ${round(steps.full)} ms` : '') +
            (runner.steps && spec.kind === 'draft' ? `, the draft's guesses ${round(steps.draftMs)} ms a step` : ''),
        );
      }
    } finally {
      await runner.close();
    }
    // Lavapipe reads a 1,200-token conversation in minutes: the reload figures are the CPU engine's (in Node).
    if (which === 'cpu' && !opts.browser) Object.assign(row, await afterReload(opts, variant, path, draft));
  }
  return [row];
}

/** What a reload costs the draft on the CPU engine (see the header). */
async function afterReload(
  opts: ScenarioOptions,
  variant: BuildVariant,
  path: string,
  draftPath: string,
): Promise<Record<string, number>> {
  const persistent = { persistent: true, budgetBytes: 2 ** 30 };
  const make = async (model: string, withDraft: boolean) => {
    const e = await createNodeEngine({ variant, threads: 2, cache: persistent, modelsDir: null });
    await e.load({ path: model }, { nCtx: N_CTX, ...(withDraft ? { draft: { path: draftPath } } : {}) });
    return e;
  };
  const earlier = RESUMED.slice(0, -2);
  const out: Record<string, number> = {};
  // The conversation read and saved with the draft's guesses (its cells saved too), as two conversations; then after a
  // reload the next turn of one with the draft's guesses, and after another the other's without.
  let e = await make(path, true);
  await e.cache.clear();
  for (const id of ['guessed', 'plain']) await timedChat(e, earlier, REPLY, id);
  await e.cache.flush();
  e.terminate();
  const resumed: RunResult[] = [];
  let draftRead = 0;
  for (const [id, speculative] of [
    ['guessed', undefined],
    ['plain', null],
  ] as const) {
    e = await make(path, true);
    resumed.push(await timedChat(e, RESUMED, REPLY, id, undefined, { speculative }));
    draftRead = draftRead || (new TestHooks(e.engine).draftProfile?.read ?? 0);
    e.terminate();
  }
  const [guessed, plain] = resumed as [RunResult, RunResult];
  if (guessed.cacheSource !== 'indexeddb' || plain.cacheSource !== 'indexeddb') {
    throw new Error(`the resumed turns came from ${guessed.cacheSource} and ${plain.cacheSource}`);
  }
  if (guessed.text !== plain.text) throw new Error('the resumed replies differ');
  Object.assign(out, {
    resume_tokens: guessed.promptTokens,
    resume_draft_ttft_ms: round(guessed.ttftMs, 0),
    resume_draft_tps: round(decodeTps(guessed)),
    resume_draft_acceptance: round(acceptance(guessed)),
    resume_draft_read: draftRead,
    resume_plain_ttft_ms: round(plain.ttftMs, 0),
    resume_plain_tps: round(decodeTps(plain)),
  });
  // The draft on its own: reading the conversation, and restoring its cells from IndexedDB instead.
  e = await make(draftPath, false);
  await e.cache.clear();
  const read = await timedChat(e, earlier, 1, 'draft-alone');
  await e.cache.flush();
  const saved = (await e.cache.stats()).saves;
  e.terminate();
  e = await make(draftPath, false);
  const restored = await timedChat(e, RESUMED, 1, 'draft-alone');
  e.terminate();
  if (restored.cacheSource !== 'indexeddb') throw new Error(`the draft's turn came from ${restored.cacheSource}`);
  Object.assign(out, {
    draft_read_tokens: read.promptTokens,
    draft_read_ms: round(read.ttftMs, 0),
    draft_saved_mb: round(saved.bytes / 1e6, 1),
    draft_restore_ms: round(restored.restoreMs ?? 0, 0),
  });
  opts.log(
    `  after a reload (${out.resume_tokens} tokens from IndexedDB, the draft's cells with them): first token ` +
      `${out.resume_draft_ttft_ms} ms, ${out.resume_draft_tps} tok/s (${out.resume_draft_acceptance} taken, the draft ` +
      `read ${out.resume_draft_read} tokens); without guesses ${out.resume_plain_ttft_ms} ms, ${out.resume_plain_tps} ` +
      `tok/s. The draft alone reads the ${out.draft_read_tokens} tokens in ${out.draft_read_ms} ms; its ` +
      `${out.draft_saved_mb} MB of cells restore in ${out.draft_restore_ms} ms`,
  );
  return out;
}
