// Embeddings and reranker scores: texts decoded with embedding outputs on, each on a slot's sequence, several per
// llama_decode (up to N_BATCH tokens), and read back pooled as the GGUF says (mean, CLS, last token, or a reranker's
// classifier). Runs exclusively (no chat request decodes meanwhile); the slots it uses lose their cached cells.
import { InvalidRequestError } from '../../errors.ts';
import { N_BATCH } from './binding/batch.ts';
import type { Session } from './run/session.ts';

const POOLING = { none: 0, mean: 1, cls: 2, last: 3, rank: 4 };

/** The pooled vector of each text (raw), and the tokens read. `kind` 'rank' reads a reranker's scores. */
export async function pooledOutputs(
  s: Session,
  texts: Int32Array[],
  kind: 'embed' | 'rank',
): Promise<{ vectors: Float32Array[]; tokens: number }> {
  const pooling = s.ctx.poolingType;
  if (kind === 'embed' && (pooling <= POOLING.none || pooling === POOLING.rank)) {
    throw new InvalidRequestError(
      'the loaded model gives no embeddings (its GGUF sets no pooling type): load an embedding model ' +
        '(nomic-embed, bge, Qwen3-Embedding…)',
      'not_an_embedding_model',
    );
  }
  if (kind === 'rank' && pooling !== POOLING.rank) {
    throw new InvalidRequestError(
      'the loaded model is not a reranker (its GGUF does not set rank pooling): load one ' +
        '(bge-reranker, jina-reranker, Qwen3-Reranker…)',
      'not_a_reranker',
    );
  }
  texts.forEach((t, i) => {
    if (t.length > N_BATCH) {
      throw new InvalidRequestError(
        `input ${i} is ${t.length} tokens; at most ${N_BATCH} are embedded at once: split it`,
        'input_too_long',
        { index: i, tokens: t.length },
      );
    }
  });
  const size = kind === 'rank' ? Math.max(1, s.model.nClsOut) : s.info.nEmbd;
  const slots = s.cache.slots.all;
  const vectors: Float32Array[] = [];
  s.ctx.setEmbeddings(true);
  try {
    for (let start = 0; start < texts.length; ) {
      // As many texts as fit one decode, one slot each.
      let end = start;
      let n = 0;
      while (end < texts.length && end - start < slots.length && n + texts[end]!.length <= N_BATCH) {
        n += texts[end++]!.length;
      }
      const group = slots.slice(0, end - start);
      for (const slot of group) s.cache.slots.reset(slot);
      s.cache.slots.makeRoom(n);
      const tokens: number[] = [];
      const pos: number[] = [];
      const seq: number[] = [];
      texts.slice(start, end).forEach((t, k) => {
        for (let p = 0; p < t.length; p++) {
          tokens.push(t[p]!);
          pos.push(p);
          seq.push(group[k]!.seq);
        }
      });
      const status = await s.llama.guard(() =>
        s.ctx.decode(
          tokens,
          pos,
          seq,
          tokens.map(() => true),
        ),
      );
      if (status !== 0) throw new Error(`llama_decode failed with status ${status} while embedding`);
      for (const slot of group) {
        vectors.push(s.ctx.pooled(slot.seq, size));
        s.cache.slots.reset(slot);
      }
      start = end;
    }
  } finally {
    s.ctx.setEmbeddings(false);
  }
  return { vectors, tokens: texts.reduce((sum, t) => sum + t.length, 0) };
}

/** A reranker's input for one document: its GGUF 'rerank' template, else [BOS] query [EOS] [SEP] document [EOS]. */
export function rerankTokens(s: Session, query: string, document: string): Int32Array {
  const m = s.model;
  const template = m.namedTemplate('rerank');
  if (template) {
    const text = template.replaceAll('{query}', query).replaceAll('{document}', document);
    return s.llama.guard(() => m.tokenize(text, true, true));
  }
  const text = (t: string) => Array.from(s.llama.guard(() => m.tokenize(t, false, false)));
  const special = (id: number) => (id >= 0 ? [id] : []);
  return Int32Array.from([
    ...special(m.bos),
    ...text(query),
    ...special(m.eos),
    ...special(m.sep),
    ...text(document),
    ...special(m.eos),
  ]);
}
