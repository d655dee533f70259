// npm run bench -- speculative [--json] [--reps N] [--engine cpu|gpu]
// Speculative decoding with n-gram guesses on a rewrite task: the model is asked to rewrite a 121-word text given in
// the prompt with a word in every EDIT_EVERY changed, and writes the text back unchanged. The model is
// bench-qwen2.5-0.5b-recite (Qwen2.5-0.5B's shapes, Q8_0, random weights whose permuted output recites RECITE_TEXT
// after any prompt): with random weights no real model's agreement exists, so the guesses from the prompt's copy agree
// by construction but around the edits, and the figure to read is the speed at the acceptance rate measured beside
// it. Decode tokens/s without guesses and with { kind: 'ngram' } at n_draft 4 and 8, the same greedy reply, on the
// CPU engine (the threaded build, 2 threads) and the GPU engine (Dawn for Node's adapter: lavapipe here), in one
// Node process; medians of --reps (default 3). A draft model is not implemented (only n-gram guesses).
import { chooseBuild } from '../../src/backends/llamacpp/worker/simd.ts';
import { createNodeEngine, type NodeEngine } from '../../src/node.ts';
import type { ChatMessage } from '../../src/types.ts';
import { ensureModel, RECITE_TEXT } from '../../test/fixtures/models.ts';
import { installDawn } from '../../test/webgpu/dawn.ts';
import { median, round, type ScenarioOptions } from '../common.ts';
import { NO_CACHE, type RunResult, timedChat } from '../timed-chat.ts';
import { rerunUnderDawn } from './webgpu.ts';

const MODEL = 'bench-qwen2.5-0.5b-recite';
const N_CTX = 1024;
const EDIT_EVERY = 10;
const DRAFTS = [4, 8];

/** The text with every EDIT_EVERY-th word (from the 5th) replaced: what the user asks to have rewritten. */
function edited(): string {
  const swaps = ['purple', 'seven', 'engine', 'tiger', 'velvet', 'rocket', 'marble', 'pepper', 'violin', 'canyon'];
  return RECITE_TEXT.split(' ')
    .map((w, i) => (i % EDIT_EVERY === 4 ? swaps[Math.floor(i / EDIT_EVERY) % swaps.length]! : w))
    .join(' ');
}

const MESSAGES: ChatMessage[] = [
  { role: 'system', content: 'You rewrite texts, keeping their words unless asked otherwise.' },
  { role: 'user', content: `Rewrite this text, correcting the words that do not fit:\n${edited()}` },
];

const decodeTps = (r: RunResult) => (r.decodeMs > 0 ? ((r.genTokens - 1) / r.decodeMs) * 1000 : 0);

export async function speculative(opts: ScenarioOptions): Promise<Array<Record<string, number>>> {
  const engines: Array<'cpu' | 'gpu'> = opts.engine ? [opts.engine] : ['cpu', 'gpu'];
  if (engines.includes('gpu') && !(globalThis.navigator as { gpu?: unknown } | undefined)?.gpu) {
    if (!process.env.HEARTH_WEBGPU) rerunUnderDawn();
    await installDawn();
  }
  const path = await ensureModel(MODEL);
  const row: Record<string, number> = { reps: opts.reps, edit_every: EDIT_EVERY };
  for (const which of engines) {
    const variant = which === 'gpu' ? 'webgpu' : chooseBuild(true, opts.simd ?? 'auto', '2 threads').variant;
    const engine: NodeEngine = await createNodeEngine({ variant, threads: 2, cache: NO_CACHE, modelsDir: null });
    try {
      await engine.load({ path }, { nCtx: N_CTX });
      const info = await engine.info();
      opts.log(`${which}: ${MODEL} on ${info.gpu ? info.gpu.adapter : `${info.threads} threads, ${info.build}`}`);
      const runs = (extra: Parameters<typeof timedChat>[5]) => async () => {
        const out: RunResult[] = [];
        for (let rep = 0; rep < opts.reps; rep++)
          out.push(await timedChat(engine, MESSAGES, 160, undefined, undefined, extra));
        return out;
      };
      await timedChat(engine, MESSAGES, 8); // warm-up: compute buffers, pipelines
      const plain = await runs({})();
      if (plain[0]!.text !== RECITE_TEXT) throw new Error(`the model did not recite its text: ${plain[0]!.text}`);
      row[`${which}_plain_tps`] = round(median(plain.map(decodeTps)));
      opts.log(`  without guesses: ${row[`${which}_plain_tps`]} tok/s (${plain[0]!.genTokens} tokens)`);
      for (const n of DRAFTS) {
        const guessed = await runs({ speculative: { kind: 'ngram', n_draft: n } })();
        if (guessed.some((r) => r.text !== plain[0]!.text)) throw new Error('the reply with guesses differs');
        const t = guessed[0]!.timings!;
        const acceptance = (t.draft_n_accepted ?? 0) / Math.max(1, t.draft_n ?? 0);
        const tps = median(guessed.map(decodeTps));
        row[`${which}_ngram${n}_tps`] = round(tps);
        row[`${which}_ngram${n}_speedup`] = round(tps / row[`${which}_plain_tps`]!);
        row[`${which}_ngram${n}_acceptance`] = round(acceptance);
        opts.log(
          `  n-gram, ${n} guesses a step: ${round(tps)} tok/s (${row[`${which}_ngram${n}_speedup`]}x), ` +
            `${t.draft_n_accepted} of ${t.draft_n} guesses taken (${round(acceptance)})`,
        );
      }
    } finally {
      await engine.terminate();
    }
  }
  return [row];
}
