// An OpenAI-compatible server as a backend (EngineOptions.backend / fallback { remote }): the same calls as the wasm
// engine, answered by llama-server, vLLM, Ollama, SGLang or OpenAI over HTTP from the page. A completion always
// streams from the server (with include_usage), so non-streamed calls, aborts and the final chunk's usage and timings
// take one path, the one the wasm engine's chunks take (api/completion.ts assembles them).
import type { Backend, CallControl, CompletionRequest, EmbedResult, EngineCore, RankResult, Supports } from '../../contract.ts';
import { AbortError, EngineError, HearthError, InvalidRequestError } from '../../errors.ts';
import type { ChatCompletionChunk, EngineInfo, ModelInfo, RemoteOptions } from '../../types.ts';
import { fetchError, responseError, serverError } from './errors.ts';
import { finishChunk, type ServerChunk, toChunk } from './chunks.ts';
import { sseData } from './sse.ts';

/** Request fields only Hearth's own engine acts on: a server would refuse or misread them. */
const LOCAL_ONLY = ['conversation_id', 'context_overflow', 'n_keep'] as const;

export class ServerBackend implements Backend {
  readonly kind = 'remote';
  // A load is, for a server, a check that it answers: the load options are about running the model on this device
  // and have nothing to act on there. Only context_overflow 'stop' is what every server does.
  readonly supports: Supports = { loadOptions: 'all', contextOverflow: ['stop'], embeddings: true, rerank: false };
  private model: ModelInfo | null = null;

  /** `fallback`: used only when the backends before it cannot run the model (router.ts). */
  constructor(readonly remote: RemoteOptions, private readonly home: EngineCore, readonly fallback = false) {}

  async load(_request: unknown, control: CallControl = {}): Promise<ModelInfo> {
    this.model = null;
    const res = await this.call('GET', '/models', undefined, control.signal).catch((err) => {
      // A server without the listing still answers chat (some proxies): only an unreachable one fails the load.
      if (err instanceof InvalidRequestError && err.code === 'model_not_found') return null;
      throw err;
    });
    const listed = ((await res?.json().catch(() => null)) as { data?: Array<{ id?: string; meta?: { n_ctx_train?: number } }> } | null)?.data ?? [];
    const entry = listed.find((m) => m.id === this.remote.model);
    const warnings = listed.length && !entry
      ? [`the server lists no model "${this.remote.model}" (it lists ${listed.map((m) => JSON.stringify(m.id)).join(', ')}); requests name it anyway`]
      : [];
    this.model = {
      name: this.remote.model, description: `served by ${this.remote.baseURL}`, architecture: 'remote', sizeBytes: 0, nParams: 0,
      nCtxTrain: entry?.meta?.n_ctx_train ?? 0, nEmbd: 0, nLayer: 0, nHead: 0, nHeadKv: 0, nVocab: 0, bosToken: -1, eosToken: -1,
      eogTokens: [], chatTemplate: null, memory: { kind: 'attention', swaWindow: 0 }, metadata: {}, promptState: null,
      ...(warnings.length ? { warnings } : {}),
    };
    return this.model;
  }

  async complete(request: CompletionRequest, control: CallControl = {}): Promise<void> {
    this.require();
    const body: Record<string, unknown> = { ...request.original, model: this.remote.model, stream: true, stream_options: { include_usage: true } };
    for (const key of LOCAL_ONLY) delete body[key];
    const sent = performance.now();
    const res = await this.call('POST', '/chat/completions', body, control.signal);
    let first = 0;
    let finish: ChatCompletionChunk | null = null;
    const totals: Pick<ServerChunk, 'usage' | 'timings'> = {};
    try {
      for await (const data of sseData(res.body!)) {
        const raw = parse(data, this.remote.baseURL);
        if (raw.error) throw serverError(res.status === 200 ? 500 : res.status, typeof raw.error === 'string' ? { message: raw.error } : raw.error, this.remote.baseURL);
        if (raw.usage) totals.usage = raw.usage;
        if (raw.timings) totals.timings = raw.timings;
        const chunk = toChunk(raw, this.remote.model);
        if (!chunk) continue;
        first ||= performance.now();
        // The chunk with the finish_reason waits for the usage, which comes after it: Hearth's last chunk carries both.
        if (chunk.choices[0]!.finish_reason) finish = chunk;
        else if (!finish) await control.onChunk?.(chunk);
      }
    } catch (err) {
      if (control.signal?.aborted) throw new AbortError();
      if (err instanceof HearthError) throw err; // the server's error event, or a chunk that is not JSON
      throw ended(this.remote.baseURL, err); // the body broke off
    }
    if (!finish) throw ended(this.remote.baseURL, null);
    await control.onChunk?.(finishChunk(finish, totals, { sent, first: first || performance.now(), end: performance.now() }));
  }

  async embed(request: { inputs: string[] }, control: CallControl = {}): Promise<EmbedResult> {
    this.require();
    const res = await this.call('POST', '/embeddings', { model: this.remote.model, input: request.inputs, encoding_format: 'float' }, control.signal);
    const body = await res.json().catch(() => null) as { data?: Array<{ index: number; embedding: number[] }>; usage?: { prompt_tokens?: number } } | null;
    const data = body?.data;
    if (!Array.isArray(data) || data.length !== request.inputs.length || !data.every((d) => Array.isArray(d.embedding))) {
      throw new EngineError(`the server at ${this.remote.baseURL} answered embeddings in a shape that is not OpenAI's`, 'remote_bad_response');
    }
    const vectors = [...data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
    return { vectors, tokens: body?.usage?.prompt_tokens ?? 0, model: this.remote.model };
  }

  rank(): Promise<RankResult> {
    throw new InvalidRequestError('rerank needs the wasm backend: a remote server is not asked for it', 'unsupported_by_backend');
  }

  async info(): Promise<EngineInfo> {
    const home = await this.home.info();
    return {
      ...home, backend: 'remote', remote: { baseURL: this.remote.baseURL, model: this.remote.model }, model: this.model,
      nCtx: this.model?.nCtxTrain ?? 0, context: null, kvCache: null,
      capabilities: { ...home.capabilities, persistentKv: false, batching: true, embeddings: true, contextShift: false },
    };
  }

  async unload(): Promise<void> {
    this.model = null;
  }

  private require() {
    if (!this.model) throw new InvalidRequestError('no model is loaded: call engine.load(source) first', 'no_model');
  }

  private async call(method: 'GET' | 'POST', path: string, body: unknown, signal: AbortSignal | undefined): Promise<Response> {
    const { baseURL, apiKey, headers } = this.remote;
    let res: Response;
    try {
      res = await fetch(baseURL.replace(/\/+$/, '') + path, {
        method, signal, body: body === undefined ? undefined : JSON.stringify(body),
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), ...headers },
      });
    } catch (err) {
      throw fetchError(err, signal, baseURL);
    }
    if (!res.ok) throw await responseError(res, baseURL);
    return res;
  }
}

function parse(data: string, where: string): ServerChunk {
  try {
    return JSON.parse(data) as ServerChunk;
  } catch {
    throw new EngineError(`the server at ${where} streamed something that is not JSON: ${data.slice(0, 100)}`, 'remote_bad_response');
  }
}

/** A stream that stopped before the answer's end: the server went away or cut the connection. */
function ended(where: string, err: unknown): EngineError {
  return new EngineError(`the server at ${where} ended the stream before the answer's end${err ? ` (${(err as Error).message ?? err})` : ''}; ` +
    'what was streamed so far is all there is', 'remote_stream_ended', { retryable: true });
}
