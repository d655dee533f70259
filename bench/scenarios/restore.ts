// npm run bench -- restore --node [--json] [--reps N] [--threads 16] [--model NAME] [--large] [--engine cpu|gpu] [--same-engine]
// A long conversation's KV state kept and brought back, in Node, on each engine there is: the GPU engine on Dawn for
// Node's adapter (lavapipe here, the GPU on the device machine) and the CPU engine (the threaded build). A ~3,000–3,900-token
// conversation is read cold (no cache: the time to first token a returning visitor would wait without Hearth's
// cache), then read with the cache on and saved to IndexedDB, in pieces of cache.chunkBytes (save rate: the state's
// bytes over the time to export and write them); the engine is made again, as a reload does, and the next question
// asked: its state restored from IndexedDB (restore rate, and the time to first token against the cold one — the
// issue's target is 20× sooner on an 8B model). Node has no IndexedDB: fake-indexeddb keeps it in JavaScript memory, so
// the rates measure the engine's side (llama.cpp's export and import, the chunking, the copies), not a browser's disk.
// The benchmark model (Qwen2.5-0.5B's shapes, Q8_0) unless --model; --large: Llama-3.1-8B's shapes at Q4_K_M (4.9 GB,
// generated on first use: minutes). The CPU engine runs the memory64 build (npm run build:wasm -- --memory64) for a
// model past what the wasm32 heap holds. --engine: one engine only (an 8B model's cold read takes hours on lavapipe).
// --same-engine: the model unloaded and loaded again in one engine rather than a new engine made (Node keeps an
// engine's heap until the process ends, and a machine may not hold an 8B model's twice: 24 GiB did not); the cold time
// is then the first read's, nothing cached.
import 'fake-indexeddb/auto';
import { createNodeEngine, type NodeEngine } from '../../src/node.ts';
import { statSync } from 'node:fs';
import { chooseBuild } from '../../src/backends/llamacpp/worker/simd.ts';
import { DEFAULT_MAX_MODEL_BYTES } from '../../src/core/limits.ts';
import type { ChatMessage } from '../../src/types.ts';
import { ensureModel, type ModelName } from '../../test/fixtures/models.ts';
import { installDawn } from '../../test/webgpu/dawn.ts';
import { median, PROMPT, round, type ScenarioOptions } from '../common.ts';
import { NO_CACHE, timedChat } from '../timed-chat.ts';
import { rerunUnderDawn } from './webgpu.ts';

/** The context: the conversation and the next turn fit, on every test model (the smallest were trained on 4,096). */
const N_CTX = 4096;
/** ~3,000–3,900 tokens (by the tokenizer): the benchmark prompt 30 times, as parts of one message. */
const CONVERSATION: ChatMessage[] = [
  {
    role: 'user',
    content: Array.from({ length: 30 }, (_, i) => `Part ${i + 1}. ${PROMPT[0]!.content}`).join('\n\n'),
  },
];
const NEXT: ChatMessage[] = [
  ...CONVERSATION,
  { role: 'assistant', content: 'Which part first?' },
  { role: 'user', content: 'The first.' },
];

export async function restore(opts: ScenarioOptions): Promise<Array<Record<string, number>>> {
  if (!opts.node) throw new Error('the restore scenario runs in Node: npm run bench -- restore --node');
  if (!(globalThis.navigator as { gpu?: unknown } | undefined)?.gpu) {
    if (!process.env.HEARTH_WEBGPU) return rerunUnderDawn();
    await installDawn();
  }
  const threads = opts.threads?.[0] ?? 16;
  const name = (opts.model ?? (opts.large ? 'bench-llama3.1-8b-q4_k_m' : 'bench-qwen2.5-0.5b')) as ModelName;
  const path = await ensureModel(name);
  const cpuBuild =
    statSync(path).size > DEFAULT_MAX_MODEL_BYTES
      ? 'mt64'
      : chooseBuild(true, opts.simd ?? 'auto', `${threads} threads`).variant;
  const rows: Array<Record<string, number>> = [];
  const engines = [
    ['gpu', 'webgpu'],
    ['cpu', cpuBuild],
  ] as const;
  for (const [engine, variant] of engines.filter(([e]) => (opts.engine ?? e) === e)) {
    const make = (cache: object) =>
      createNodeEngine({ variant, threads, cache, modelsDir: null }).then(async (e) => {
        await e.load({ path }, { nCtx: N_CTX });
        return e;
      });
    const row: Record<string, number> = { gpu: engine === 'gpu' ? 1 : 0 };
    const persistent = { persistent: true, budgetBytes: 16 * 2 ** 30 };
    let e: NodeEngine | null = await make(opts.sameEngine ? persistent : NO_CACHE);
    try {
      const info = await e.info();
      opts.log(`${name} on the ${engine === 'gpu' ? `GPU engine (${info.gpu?.adapter})` : `CPU engine (${variant})`}:`);
      const cold: number[] = [];
      let coldTokens = 0;
      if (!opts.sameEngine) {
        for (let r = 0; r < opts.reps; r++) {
          const run = await timedChat(e, NEXT, 1);
          cold.push(run.ttftMs);
          coldTokens = run.promptTokens;
        }
        await e.unload();
        e = await make(persistent);
      }
      await e.cache.clear(); // the other engine's record of this conversation (the engines share their state)
      const first = await timedChat(e, CONVERSATION, 1, 'restore');
      await e.cache.flush();
      const saves = (await e.cache.stats()).saves;
      await e.unload();
      if (opts.sameEngine) {
        // The first read was cold (nothing cached), of the conversation without its last two turns: fewer tokens than
        // the restored request, so the ratio below is if anything too small.
        cold.push(first.ttftMs);
        coldTokens = first.promptTokens;
        await e.load({ path }, { nCtx: N_CTX }); // the model again in the same heap: the state only in IndexedDB now
      } else {
        e = await make(persistent); // a reload: the state is only in IndexedDB now
      }
      const restored = await timedChat(e, NEXT, 1, 'restore');
      if (restored.cacheSource !== 'indexeddb') throw new Error(`the next turn came from ${restored.cacheSource}`);
      Object.assign(row, {
        tokens: restored.promptTokens,
        cold_tokens: coldTokens,
        cold_ttft_ms: round(median(cold), 0),
        first_ttft_ms: round(first.ttftMs, 0),
        saved_mb: round(saves.bytes / 1e6, 1),
        save_mb_per_s: round(saves.bytes / 1e3 / saves.ms, 1),
        restore_mb: round((restored.restoreBytes ?? 0) / 1e6, 1),
        restore_mb_per_s: round((restored.restoreBytes ?? 0) / 1e3 / (restored.restoreMs ?? 1), 1),
        restored_ttft_ms: round(restored.ttftMs, 0),
        restored_cached_tokens: restored.cachedTokens ?? 0,
        ratio_cold_vs_restored: round(median(cold) / restored.ttftMs, 1),
      });
      opts.log(
        `  ${row.tokens} tokens: cold (${row.cold_tokens} tokens) ${row.cold_ttft_ms} ms to the first token; saved ${row.saved_mb} MB at ` +
          `${row.save_mb_per_s} MB/s; restored ${row.restore_mb} MB at ${row.restore_mb_per_s} MB/s, first token after ` +
          `${row.restored_ttft_ms} ms (${row.restored_cached_tokens} cached): ${row.ratio_cold_vs_restored}x sooner`,
      );
      rows.push(row);
    } finally {
      await e?.unload();
    }
  }
  return rows;
}
