// embeddings.create and rerank: requests and responses.

export interface EmbeddingCreateParams {
  /** One text or several (embedded together, in batches). */
  input: string | string[];
  model?: string;
  /** Keep the first `dimensions` values (models trained for it, such as Qwen3-Embedding), normalised again. */
  dimensions?: number | null;
  /** 'float' (default): arrays of numbers; 'base64': each vector's little-endian float32 bytes in base64, as OpenAI
   * sends them (the `openai` SDK asks for this when its caller names no format, and decodes it). */
  encoding_format?: 'float' | 'base64' | null;
  signal?: AbortSignal;
}

export interface CreateEmbeddingResponse<E extends number[] | string = number[]> {
  object: 'list';
  /** One unit-length vector per input, in input order. */
  data: Array<{ object: 'embedding'; index: number; embedding: E }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface RerankParams {
  query: string;
  documents: string[];
  /** Return only the best `top_n` (default all). */
  top_n?: number | null;
  /** Include each document's text in its result. */
  return_documents?: boolean | null;
  signal?: AbortSignal;
}

export interface RerankResponse {
  model: string;
  /** Best first. */
  results: Array<{ index: number; relevance_score: number; document?: { text: string } }>;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface Embeddings {
  /** For embedding models (a pooling type in the GGUF); InvalidRequestError code 'not_an_embedding_model' otherwise. */
  create(params: EmbeddingCreateParams & { encoding_format: 'base64' }): Promise<CreateEmbeddingResponse<string>>;
  create(params: EmbeddingCreateParams & { encoding_format?: 'float' | null }): Promise<CreateEmbeddingResponse>;
  create(params: EmbeddingCreateParams): Promise<CreateEmbeddingResponse<number[] | string>>;
}
