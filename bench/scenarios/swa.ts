// npm run bench -- swa [--json] [--reps N]
// Sliding-window models both ways: a full-size cache for the sliding-window layers (swaFull, llama.cpp's default)
// and a window-sized one that goes back only to checkpoints. On the sliding-window benchmark model (Gemma 3 270M's
// shapes, window 512), Node, single-thread build:
// - KV memory at 2,048, 8,192 and 32,768-token contexts, as llama.cpp allocates it (its "llama_kv_cache: size" lines);
// - prompt time of three cached turns on a ~1,200-token conversation (a long system prompt, then turns): a follow-up
//   question (the whole conversation reused either way), a regenerated answer (back one token), and an edited last
//   question (back into it). Median of --reps; the JSON's last line compares the two.
import { basename } from 'node:path';
import { LlamaContext } from '../../src/backends/llamacpp/binding/context.ts';
import { LlamaModel } from '../../src/backends/llamacpp/binding/model.ts';
import { createNodeEngine } from '../../src/node.ts';
import type { ChatMessage } from '../../src/types.ts';
import { ensureModel } from '../../test/fixtures/models.ts';
import { openLlama } from '../../test/helpers.ts';
import { median, round, type ScenarioOptions } from '../common.ts';

const MODEL = 'bench-gemma3-270m';
const N_CTX = 8192;
const KV_CONTEXTS = [2048, 8192, 32768];
const SYSTEM = `You are a careful assistant for a travel company. ${'Answer in short sentences, name sources, keep prices in euros, and never invent a timetable. '.repeat(50)}`;
const QUESTIONS = [
  'Where should I go in May?',
  'How do I get there by train?',
  'What does a week cost?',
  'Any food to try?',
  'Is it busy then?',
  'What should I pack?',
  'Can I bring a bike?',
  'Which museum first?',
  'Where to stay?',
  'Is the water warm?',
  'Do I need cash?',
  'What about the night trains?',
  'Any day trips?',
  'Which island?',
  'Last tips?',
];
const TURNS = 12;

export async function swa(opts: ScenarioOptions) {
  const path = await ensureModel(MODEL);
  const row: Record<string, number> = { n_ctx: N_CTX, threads: 1, reps: opts.reps };
  for (const swaFull of [true, false]) {
    const name = swaFull ? 'full' : 'window';
    for (const n of KV_CONTEXTS) row[`${name}_kv_mib_${n}`] = round((await kvBytes(path, swaFull, n)) / 1024 ** 2);
    const times = await cachedTurns(path, swaFull, opts.reps);
    Object.assign(row, Object.fromEntries(Object.entries(times).map(([k, v]) => [`${name}_${k}`, v])));
    opts.log(
      `  swaFull ${swaFull}: KV ${KV_CONTEXTS.map((n) => `${row[`${name}_kv_mib_${n}`]} MiB at ${n}`).join(', ')} tokens; ` +
        `prompt ms: follow-up ${times.follow_ms}, regenerate ${times.regenerate_ms}, edit ${times.edit_ms} ` +
        `(cached ${times.edit_cached} of ${times.edit_prompt} tokens)`,
    );
  }
  for (const n of KV_CONTEXTS) {
    row[`kv_ratio_window_vs_full_${n}`] = round(row[`window_kv_mib_${n}`]! / row[`full_kv_mib_${n}`]!);
  }
  row.follow_ratio_window_vs_full = round(row.window_follow_ms! / row.full_follow_ms!);
  row.regenerate_ratio_window_vs_full = round(row.window_regenerate_ms! / row.full_regenerate_ms!);
  row.edit_ratio_window_vs_full = round(row.window_edit_ms! / row.full_edit_ms!);
  return [row];
}

/** KV cache bytes llama.cpp allocates for an nCtx context with the engine's sequences (unified cache). */
async function kvBytes(path: string, swaFull: boolean, nCtx: number): Promise<number> {
  const llama = await openLlama();
  const model = (await LlamaModel.load(llama, `/models/${basename(path)}`))!;
  // Read the sizes as they are logged: llama.cpp's debug lines about the graph that follow would push them out of
  // the log tail.
  const sizes: number[] = [];
  const push = llama.log.push.bind(llama.log);
  llama.log.push = (level, text) => {
    for (const m of text.matchAll(/llama_kv_cache: size = +([\d.]+) MiB/g)) sizes.push(Number(m[1]));
    push(level, text);
  };
  const ctx = await LlamaContext.create(model, {
    nCtx,
    nBatch: 512,
    nUbatch: 512,
    nSeqMax: 5,
    threads: 1,
    typeK: 'f32',
    typeV: 'f32',
    flashAttn: 0,
    swaFull,
  });
  llama.log.push = push;
  ctx.free();
  model.free();
  if (!sizes.length) throw new Error('llama.cpp logged no KV cache size');
  return sizes.reduce((a, b) => a + b, 0) * 1024 ** 2;
}

/** Builds a conversation, then per rep: a follow-up question, the same request again, and its question edited. */
async function cachedTurns(path: string, swaFull: boolean, reps: number) {
  const engine = await createNodeEngine({ cache: { persistent: false, minTokens: 32 } });
  await engine.load({ path }, { nCtx: N_CTX, swaFull });
  const ask = async (messages: ChatMessage[]) =>
    engine.chat.completions.create({ messages, conversation_id: 'bench', temperature: 0, max_tokens: 64 });
  let messages: ChatMessage[] = [{ role: 'system', content: SYSTEM }];
  try {
    for (const q of QUESTIONS.slice(0, TURNS)) {
      messages.push({ role: 'user', content: q });
      messages.push({ role: 'assistant', content: (await ask(messages)).choices[0]!.message.content });
    }
    const t: Record<string, number[]> = {
      follow_ms: [],
      regenerate_ms: [],
      edit_ms: [],
      edit_cached: [],
      edit_prompt: [],
    };
    for (let rep = 0; rep < reps; rep++) {
      const q = QUESTIONS[TURNS + (rep % 3)]!;
      const turn = [...messages, { role: 'user' as const, content: `${q} Please answer in detail.` }];
      t.follow_ms!.push((await ask(turn)).timings.prompt_ms);
      t.regenerate_ms!.push((await ask(turn)).timings.prompt_ms);
      const edited = [...messages, { role: 'user' as const, content: `${q} Please answer briefly.` }];
      const r = await ask(edited);
      t.edit_ms!.push(r.timings.prompt_ms);
      t.edit_cached!.push(r.usage.prompt_tokens_details.cached_tokens);
      t.edit_prompt!.push(r.usage.prompt_tokens);
      messages = [...edited, { role: 'assistant', content: r.choices[0]!.message.content }];
    }
    return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, round(median(v))]));
  } finally {
    await engine.unload();
  }
}
