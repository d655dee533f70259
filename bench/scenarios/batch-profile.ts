// Where a batched decode step's time goes (part of `npm run bench -- batch`). Node, single-thread build, the
// benchmark-size model, medians over interleaved repetitions:
// - the scheduler's own step loop with 1 and 4 concurrent requests: llama_decode, sampling, the rest of the step
//   (batch building, detokenizing, chunks) and the time between steps (the event loop);
// - raw llama_decode costs in one context: one token vs one token in each of 4 sequences, with and without logits
//   (the output layer, 151,936 x 896 here, is computed once per sequence that samples), and the per-token cost of
//   a 124-token prompt batch (the batched-compute ceiling: one output row for the whole batch).
import { LlamaContext } from '../../src/backends/llamacpp/binding/context.ts';
import { LlamaModel } from '../../src/backends/llamacpp/binding/model.ts';
import { createNodeEngine } from '../../src/node.ts';
import { modelsDir } from '../../test/fixtures/models.ts';
import { inspect, NO_CACHE, openLlama } from '../../test/helpers.ts';
import { median, round } from '../common.ts';

const model = `${modelsDir}/bench-qwen2.5-0.5b.gguf`;

export async function stepProfile(reps: number): Promise<Record<string, number>> {
  const engine = await createNodeEngine({ threads: 1, cache: NO_CACHE });
  await engine.load({ path: model }, { nCtx: 2048, nParallel: 4 });
  const profile = inspect(engine).profile;
  const out: Record<string, number> = {};
  const ask = (k: number, maxTokens: number) =>
    Promise.all(
      Array.from({ length: k }, (_, i) =>
        engine.chat.completions.create({
          messages: [{ role: 'user', content: `Stream ${i}: tell a story.` }],
          max_tokens: maxTokens,
          temperature: 0,
          stream: false,
        }),
      ),
    );
  try {
    await ask(4, 16); // warm-up: wasm tier-up, first allocations
    for (const k of [1, 4]) {
      const before = { ...profile };
      const t0 = performance.now();
      await ask(k, 24 * reps);
      const wall = performance.now() - t0;
      const d = (key: Exclude<keyof typeof profile, 'byTokens'>) => profile[key] - before[key];
      const steps = d('steps');
      out[`step_ms_${k}`] = round(wall / steps);
      out[`step_decode_ms_${k}`] = round(d('decodeMs') / steps);
      out[`step_sample_ms_${k}`] = round(d('sampleMs') / steps);
      out[`step_other_ms_${k}`] = round((d('stepMs') - d('decodeMs') - d('sampleMs')) / steps);
      out[`between_steps_ms_${k}`] = round((wall - d('stepMs')) / steps);
    }
  } finally {
    await engine.unload();
  }
  return out;
}

export async function decodeCosts(reps: number): Promise<Record<string, number>> {
  const llama = await openLlama();
  const m = (await LlamaModel.load(llama, '/models/bench-qwen2.5-0.5b.gguf'))!;
  const ctx = await LlamaContext.create(m, {
    nCtx: 4096,
    nBatch: 512,
    nUbatch: 512,
    nSeqMax: 4,
    threads: 1,
    typeK: 'f32',
    typeV: 'f32',
    flashAttn: 0,
  });
  const pos = [0, 0, 0, 0];
  const decode = async (tokens: number[], seqs: number[], logits: boolean) => {
    const t0 = performance.now();
    const status = await ctx.decode(
      tokens,
      seqs.map((s) => pos[s]!++),
      seqs,
      tokens.map((_, i) => logits || i === tokens.length - 1),
    );
    if (status !== 0) throw new Error(`decode failed (${status})`);
    return performance.now() - t0;
  };
  try {
    const prompt = Array.from({ length: 124 }, (_, i) => 1000 + ((i * 7919) % 50000));
    for (let s = 0; s < 4; s++) {
      await decode(
        prompt.slice(0, 40),
        prompt.slice(0, 40).map(() => s),
        false,
      );
    }
    for (let r = 0; r < 3; r++) await decode([5, 6, 7, 8], [0, 1, 2, 3], true); // warm-up
    const t = {
      one: [] as number[],
      oneBare: [] as number[],
      four: [] as number[],
      fourBare: [] as number[],
      prompt: [] as number[],
    };
    for (let r = 0; r < Math.max(9, reps * 4); r++) {
      t.one.push(await decode([5], [0], true));
      t.oneBare.push(await decode([5], [0], false));
      t.four.push(await decode([5, 6, 7, 8], [0, 1, 2, 3], true));
      t.fourBare.push(await decode([5, 6, 7, 8], [0, 1, 2, 3], false));
      ctx.seqRm(3);
      pos[3] = 0;
      t.prompt.push(
        (await decode(
          prompt,
          prompt.map(() => 3),
          false,
        )) / prompt.length,
      );
      ctx.seqRm(3, 40);
      pos[3] = 40;
    }
    return {
      decode_1_ms: round(median(t.one)),
      decode_1_no_logits_ms: round(median(t.oneBare)),
      decode_4_ms: round(median(t.four)),
      decode_4_no_logits_ms: round(median(t.fourBare)),
      logits_ms_per_row: round((median(t.four) - median(t.fourBare)) / 4),
      prompt_ms_per_token: round(median(t.prompt)),
    };
  } finally {
    ctx.free();
    m.free();
  }
}
