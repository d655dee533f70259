// llama.cpp's sampler chain (settings, grammar) and the log-probabilities of a decode's logits.
import type { SamplerParams } from '../../../contract.ts';
import type { LlamaContext } from './context.ts';
import type { LlamaModel } from './model.ts';
import { index32 } from './module.ts';

/** Thrown when llama.cpp refuses a GBNF grammar; `detail` holds its parser's messages. */
export class GrammarError extends Error {
  constructor(readonly detail: string[]) {
    super(`llama.cpp could not parse the grammar${detail.length ? `: ${detail.join('; ')}` : ''}`);
  }
}

export class Sampler {
  private ptrValue: number;

  /** `grammar`: GBNF with a rule named root that every sampled token must follow (GrammarError when it does not parse).
   */
  constructor(
    readonly model: LlamaModel,
    p: SamplerParams,
    grammar: string | null = null,
  ) {
    const llama = model.llama;
    const mark = llama.log.mark();
    const create = (g: number) =>
      llama.mod._hearth_sampler_new(
        model.ptr,
        p.temperature,
        p.topK,
        p.topP,
        p.minP,
        p.repeatLastN,
        p.repeatPenalty,
        p.frequencyPenalty,
        p.presencePenalty,
        p.seed >>> 0,
        g,
      );
    this.ptrValue = grammar ? llama.withCString(grammar, create) : create(0);
    if (!this.ptrValue) {
      if (grammar) throw new GrammarError(llama.log.since(mark));
      throw new Error('llama.cpp could not create the sampler');
    }
  }

  /** Samples from the logits at batch index i of ctx's last decode, and records the token (penalties, grammar). */
  sample(ctx: LlamaContext, i: number): number {
    return this.model.llama.mod._hearth_sampler_sample(this.ptrValue, ctx.ptr, i);
  }

  /** Records a token (e.g. of the prompt) in the penalty history without sampling. */
  accept(token: number) {
    this.model.llama.mod._hearth_sampler_accept(this.ptrValue, token);
  }

  /** Which of `tokens` the grammar allows next, checked together; then moves the grammar past `accept`, if given. */
  grammarAllows(tokens: Int32Array, accept = -1): boolean[] {
    const llama = this.model.llama;
    return llama.withBuffer(5 * tokens.length, (buf) => {
      llama.heap().i32.set(tokens, index32(buf));
      const out = buf + 4 * tokens.length;
      if (!llama.mod._hearth_sampler_grammar_check(this.ptrValue, buf, tokens.length, out, accept)) {
        throw new Error('the sampler has no grammar');
      }
      return [...llama.heap().u8.subarray(out, out + tokens.length)].map((v) => v === 1);
    });
  }

  free() {
    if (this.ptrValue) this.model.llama.mod._hearth_sampler_free(this.ptrValue);
    this.ptrValue = 0;
  }
}

export interface TokenLogprobs {
  logprob: number;
  /** The most likely tokens at that step, most likely first. */
  top: Array<{ token: number; logprob: number }>;
}

/** The log-probability of `token` at batch index i of ctx's last decode (from the raw logits), and the `nTop`
 * likeliest. */
export function logprobs(ctx: LlamaContext, i: number, token: number, nTop: number): TokenLogprobs {
  const llama = ctx.model.llama;
  return llama.withBuffer(8 * Math.max(1, nTop), (buf) => {
    const ids = buf;
    const lps = buf + 4 * nTop;
    const logprob = llama.mod._hearth_logprobs(ctx.ptr, i, token, nTop, ids, lps);
    const { i32, f32 } = llama.heap();
    const top = [];
    for (let k = 0; k < nTop; k++) top.push({ token: i32[index32(ids) + k]!, logprob: f32[index32(lps) + k]! });
    return { logprob, top };
  });
}

/** The likeliest token at batch index i of ctx's last decode, and its probability among the `k` likeliest (llama.cpp's
 * draft sampler: top-k, then the candidates' probabilities). */
export function topToken(ctx: LlamaContext, i: number, k: number): { token: number; p: number } {
  const llama = ctx.model.llama;
  return llama.withBuffer(4, (buf) => {
    const token = llama.mod._hearth_top_token(ctx.ptr, i, k, buf);
    return { token, p: llama.heap().f32[index32(buf)]! };
  });
}
