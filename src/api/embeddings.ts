// Embeddings and rerank, the OpenAI (and Cohere/Jina rerank) shapes over the engine's two flat calls: requests checked
// on the caller's side, vectors normalised (and shortened to `dimensions`) here, results sorted by score.
import type { CreateEmbeddingResponse, EmbeddingCreateParams, RerankParams, RerankResponse } from '../types.ts';
import { bytesToBase64 } from '../core/bytes.ts';
import type { EmbedResult, RankResult } from '../contract.ts';
import { invalidParameter as bad } from '../errors.ts';

export interface EmbedRequest {
  inputs: string[];
  dimensions: number | null;
  base64: boolean;
}

export function embedInputs(p: EmbeddingCreateParams): EmbedRequest {
  if (!p || typeof p !== 'object') bad('params', 'expected an object');
  const inputs = typeof p.input === 'string' ? [p.input] : p.input;
  if (!Array.isArray(inputs) || !inputs.length || !inputs.every((s) => typeof s === 'string' && s.length > 0)) {
    bad('input', 'expected a non-empty string or a non-empty array of non-empty strings');
  }
  const d = p.dimensions;
  if (d !== undefined && d !== null && (!Number.isInteger(d) || d < 1)) {
    bad('dimensions', 'expected a positive integer');
  }
  const format = p.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    bad('encoding_format', `expected "float" or "base64", got ${JSON.stringify(format)}`);
  }
  return { inputs, dimensions: d ?? null, base64: format === 'base64' };
}

export function embeddingResponse(
  r: EmbedResult,
  { dimensions, base64 }: Omit<EmbedRequest, 'inputs'>,
): CreateEmbeddingResponse<number[] | string> {
  return {
    object: 'list',
    data: r.vectors.map((v, index) => {
      if (dimensions !== null && dimensions > v.length) {
        bad('dimensions', `the model gives ${v.length} dimensions at most`);
      }
      const unit = normalise(dimensions === null ? v : v.slice(0, dimensions));
      return { object: 'embedding', index, embedding: base64 ? float32Base64(unit) : unit };
    }),
    model: r.model,
    usage: { prompt_tokens: r.tokens, total_tokens: r.tokens },
  };
}

/** OpenAI's base64 encoding: the vector's float32 values, little-endian, in base64. */
function float32Base64(v: number[]): string {
  const bytes = new Uint8Array(v.length * 4);
  const view = new DataView(bytes.buffer);
  v.forEach((x, i) => view.setFloat32(i * 4, x, true));
  return bytesToBase64(bytes);
}

function normalise(v: number[]): number[] {
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm > 0 ? v.map((x) => x / norm) : v;
}

export function rerankInputs(p: RerankParams): { query: string; documents: string[] } {
  if (!p || typeof p !== 'object') bad('params', 'expected an object');
  if (typeof p.query !== 'string' || !p.query) bad('query', 'expected a non-empty string');
  if (!Array.isArray(p.documents) || !p.documents.length || !p.documents.every((s) => typeof s === 'string')) {
    bad('documents', 'expected a non-empty array of strings');
  }
  const n = p.top_n;
  if (n !== undefined && n !== null && (!Number.isInteger(n) || n < 1)) bad('top_n', 'expected a positive integer');
  return { query: p.query, documents: p.documents };
}

export function rerankResponse(r: RankResult, p: RerankParams): RerankResponse {
  const results = r.scores.map((relevance_score, index) => ({
    index,
    relevance_score,
    ...(p.return_documents ? { document: { text: p.documents[index]! } } : {}),
  }));
  results.sort((a, b) => b.relevance_score - a.relevance_score);
  return {
    model: r.model,
    results: results.slice(0, p.top_n ?? undefined),
    usage: { prompt_tokens: r.tokens, total_tokens: r.tokens },
  };
}
