// npm run bench -- grammar [--json] [--reps N]
// What a grammar costs while decoding: the benchmark model (Qwen2.5-0.5B shapes, Q8_0, a 151,936-token vocabulary)
// generates 64 tokens freely and 64 tokens held to a JSON schema, alternately, in the Node engine (the same wasm as
// the page, single-thread build). The sampler lets the grammar check only the token the chain picked and applies it
// to the whole vocabulary only when that token is refused; a random-weight model is refused at almost every step, so
// this is the worst case (a trained model mostly writes what the schema allows). Patch 0022 makes that pass cheaper.
import { ensureModel } from '../../test/fixtures/models.ts';
import { createNodeEngine } from '../../src/node.ts';
import { median, pause, PROMPT, round, type ScenarioOptions } from '../common.ts';

const GEN = 64;
const SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string', maxLength: 40 },
    items: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string', maxLength: 20 }, qty: { type: 'integer', minimum: 0, maximum: 99 } },
        required: ['name', 'qty'],
      },
      minItems: 20,
    },
  },
  required: ['title', 'items'],
};

export async function grammar(opts: ScenarioOptions) {
  const path = await ensureModel('bench-qwen2.5-0.5b');
  const engine = await createNodeEngine({ cache: { persistent: false, conversations: false, systemPrompt: false } });
  await engine.load({ path }, { nCtx: 1024 });
  const run = async (schema: boolean) => {
    const r = await engine.chat.completions.create({
      messages: PROMPT,
      max_tokens: GEN,
      seed: 7,
      temperature: 0.8,
      ...(schema
        ? { response_format: { type: 'json_schema' as const, json_schema: { name: 'list', schema: SCHEMA } } }
        : {}),
    });
    if (r.usage.completion_tokens !== GEN) throw new Error(`generated ${r.usage.completion_tokens} tokens, not ${GEN}`);
    return (GEN / r.timings.predicted_ms) * 1000;
  };
  try {
    await run(false);
    await run(true);
    const free: number[] = [];
    const schema: number[] = [];
    for (let rep = 0; rep < opts.reps; rep++) {
      for (const s of rep % 2 ? [true, false] : [false, true]) {
        await pause(200);
        (s ? schema : free).push(await run(s));
      }
    }
    const row = {
      gen: GEN,
      reps: opts.reps,
      decode_tps_free: round(median(free)),
      decode_tps_schema: round(median(schema)),
      ratio: round(median(schema) / median(free), 3),
    };
    opts.log(
      `decode ${row.decode_tps_free} tok/s free, ${row.decode_tps_schema} tok/s under a JSON schema: ${round((1 - row.ratio) * 100, 1)}% slower`,
    );
    return [row];
  } finally {
    await engine.unload();
  }
}
