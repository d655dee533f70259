// npm run bench -- resume [--json] [--reps N]
// Resuming a ~2,000-token conversation (long system prompt + 20 turns) on the benchmark-size model in Chromium, at 2
// threads: time to first token (TTFT) with no cache, with the conversation's KV state in memory, and after a page
// reload with the state restored from IndexedDB; what each turn's save writes; how fast a restore reads.
//
// The conversation is built turn by turn with the cache on (memory TTFT: each turn prefills only its new message),
// saved after every turn. Then the page reloads and the next turn is asked (restored TTFT); then the same request on
// an engine without cache (cold TTFT, median of --reps).
import { ensureModel } from '../../test/fixtures/models.ts';
import { openBenchPage } from '../browser.ts';
import type { RunResult } from '../timed-chat.ts';
import { MUSEUM_SYSTEM as SYSTEM, median, museumQuestion as question, round, type ScenarioOptions } from '../common.ts';
import type { ChatMessage } from '../../src/types.ts';

const THREADS = 2;
const N_CTX = 4096;
const TURNS = 20;
const REPLY_TOKENS = 16;
const CONVERSATION = 'bench-resume';

export async function resume(opts: ScenarioOptions) {
  await ensureModel('bench-qwen2.5-0.5b');
  const url = '/test-models/bench-qwen2.5-0.5b.gguf';
  const b = await openBenchPage();
  try {
    const cache = { persistent: true, budgetBytes: 2 ** 30 };
    const info = await b.call('loadHearth', url, THREADS, N_CTX, cache);
    opts.log(
      `hearth ${info.build} build, ${info.threads} threads, n_ctx ${info.nCtx}, KV ${info.kvCache!.typeK}/${info.kvCache!.typeV}, ` +
        `llama.cpp ${info.llamaBuild}`,
    );

    // Build the conversation: memory-cached turns, each saved before the next.
    const messages: ChatMessage[] = [{ role: 'system', content: SYSTEM }];
    const turns: Array<RunResult & { saveMs: number; flushMs: number; savedBytes: number; newTokens: number }> = [];
    const before = await b.call('hearthStats');
    let prevBytes = before.bytes;
    let prevSaveMs = before.saves.ms;
    let prevTokens = 0;
    for (let i = 0; i < TURNS; i++) {
      messages.push({ role: 'user', content: question(i) });
      const r = await b.call('runHearth', messages, REPLY_TOKENS, CONVERSATION);
      const { ms, stats } = await b.call('flushHearth');
      // Tokens the slot now holds: the prompt plus the reply (the reply's last token is sampled, not decoded).
      const held = r.promptTokens + r.genTokens - 1;
      // Save time: exporting the new cells and writing them, in the background after the reply.
      turns.push({
        ...r,
        saveMs: stats.saves.ms - prevSaveMs,
        flushMs: ms,
        savedBytes: stats.bytes - prevBytes,
        newTokens: held - prevTokens,
      });
      prevBytes = stats.bytes;
      prevSaveMs = stats.saves.ms;
      prevTokens = held;
      messages.push({ role: 'assistant', content: r.text ?? '' });
      opts.log(
        `  turn ${String(i + 1).padStart(2)}: prompt ${r.promptTokens} tokens, ${r.cachedTokens} cached (${r.cacheSource}), ` +
          `TTFT ${r.ttftMs.toFixed(0)} ms, saved ${(turns.at(-1)!.savedBytes / 1e6).toFixed(2)} MB in ${turns.at(-1)!.saveMs.toFixed(0)} ms ` +
          `(still pending when the reply ended: ${ms.toFixed(0)} ms)`,
      );
    }
    messages.push({ role: 'user', content: question(TURNS) });
    const stats = await b.call('hearthStats');

    // A reload: a new page, a new engine, the model loaded again; the state comes from IndexedDB.
    await b.reload();
    await b.call('loadHearth', url, THREADS, N_CTX, cache);
    const restored = await b.call('runHearth', messages, REPLY_TOKENS, CONVERSATION);
    opts.log(
      `  after reload: prompt ${restored.promptTokens} tokens, ${restored.cachedTokens} cached (${restored.cacheSource}), ` +
        `TTFT ${restored.ttftMs.toFixed(0)} ms (restore ${restored.restoreMs!.toFixed(0)} ms)`,
    );

    // The same request with no cache at all.
    await b.call('loadHearth', url, THREADS, N_CTX);
    const colds: RunResult[] = [];
    for (let rep = 0; rep < opts.reps; rep++) {
      colds.push(await b.call('runHearth', messages, REPLY_TOKENS));
      opts.log(`  cold: prompt ${colds.at(-1)!.promptTokens} tokens, TTFT ${colds.at(-1)!.ttftMs.toFixed(0)} ms`);
    }
    await b.call('unload');

    const cold = median(colds.map((r) => r.ttftMs));
    // Turn 1 decodes the whole system prompt; later turns show the in-memory cache. Median over turns 2..20.
    const later = turns.slice(1);
    const memory = median(later.map((t) => t.ttftMs));
    const saves = later.map((t) => t.savedBytes);
    // KV bytes per token of this model and cache types: a K row and a V row in every layer.
    const m = info.model!;
    const rowBytes = (t: string) =>
      (m.nEmbd / m.nHead) * m.nHeadKv * ({ f32: 4, f16: 2, q8_0: 34 / 32, q4_0: 18 / 32 }[t] ?? 2);
    const kvPerToken = m.nLayer * (rowBytes(info.kvCache!.typeK) + rowBytes(info.kvCache!.typeV));
    const deltaKv = median(later.map((t) => t.newTokens * kvPerToken));
    const restoredBytes = restored.restoreBytes!;
    const row = {
      threads: THREADS,
      prompt_tokens: restored.promptTokens,
      cached_tokens_restored: restored.cachedTokens!,
      ttft_cold_ms: round(cold),
      ttft_memory_ms: round(memory),
      ttft_restored_ms: round(restored.ttftMs),
      ratio_cold_over_restored: round(cold / restored.ttftMs),
      ratio_cold_over_memory: round(cold / memory),
      ttft_turn2_ms: round(turns[1]!.ttftMs),
      ttft_turn20_ms: round(turns[TURNS - 1]!.ttftMs),
      ratio_turn20_over_turn2: round(turns[TURNS - 1]!.ttftMs / turns[1]!.ttftMs),
      save_bytes_per_turn: Math.round(median(saves)),
      delta_kv_bytes_per_turn: Math.round(deltaKv),
      ratio_save_over_delta: round(median(later.map((t) => t.savedBytes / (t.newTokens * kvPerToken)))),
      save_ms_per_turn: round(median(later.map((t) => t.saveMs))),
      save_wait_ms_per_turn: round(median(later.map((t) => t.flushMs))),
      restore_ms: round(restored.restoreMs!),
      restore_mb_per_s: round(restoredBytes / 1e6 / (restored.restoreMs! / 1000)),
      restored_bytes: restoredBytes,
      stored_bytes: stats.bytes,
      kv_bytes_per_token: kvPerToken,
      saved_bytes_per_token: round(median(later.map((t) => t.savedBytes / t.newTokens))),
      reps: opts.reps,
    };
    opts.log(
      `  TTFT cold ${row.ttft_cold_ms} ms, memory ${row.ttft_memory_ms} ms, restored ${row.ttft_restored_ms} ms: ` +
        `cold/restored ${row.ratio_cold_over_restored}x, cold/memory ${row.ratio_cold_over_memory}x`,
    );
    opts.log(
      `  per turn: saved ${(row.save_bytes_per_turn / 1e6).toFixed(2)} MB (${row.ratio_save_over_delta}x the new tokens' KV) in ` +
        `${row.save_ms_per_turn} ms; restore ${(restoredBytes / 1e6).toFixed(1)} MB at ${row.restore_mb_per_s} MB/s; ` +
        `turn 20 / turn 2 TTFT ${row.ratio_turn20_over_turn2}`,
    );
    return [row];
  } finally {
    await b.close();
  }
}
