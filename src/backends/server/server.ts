// An OpenAI-compatible server as a backend (EngineOptions.backend / fallback { remote }): the same calls as the wasm
// engine, answered by llama-server, vLLM, Ollama, SGLang or OpenAI over HTTP from the page. A completion always
// streams from the server (with include_usage), so non-streamed calls, aborts and the final chunk's usage and timings
// take one path, the one the wasm engine's chunks take (core/chat/completion.ts assembles them).
import type {
  Backend,
  BackendInfo,
  CallControl,
  CompletionRequest,
  EmbedResult,
  RankResult,
  Supports,
} from '../../contract.ts';
import { AbortError, EngineError, HearthError, InvalidRequestError } from '../../errors.ts';
import type { ChatCompletionChunk, ChatMessage, ContentPart, ModelInfo, RemoteOptions } from '../../types.ts';
import { VERSION } from '../../core/build.ts';
import { responseError, serverError, unreachable } from './http-errors.ts';
import { finishChunk, type ServerChunk, toChunk } from './chunks.ts';
import { sseData } from './sse.ts';
import { bytesToBase64 } from '../../core/bytes.ts';

/** How long a server may send nothing (before its first byte, or between two events of a stream). Generous: a big
 * prompt on a busy server takes a while before its first token. */
const IDLE_MS = 120_000;

type Call = ReturnType<ServerBackend['watch']>;

/** Request fields only Hearth's own engine acts on: a server would refuse or misread them. */
const LOCAL_ONLY = ['conversation_id', 'context_overflow', 'n_keep'] as const;

export class ServerBackend implements Backend {
  readonly kind = 'remote';
  // A load is, for a server, a check that it answers: the load options are about running the model on this device
  // and have nothing to act on there. Only context_overflow 'stop' is what every server does.
  readonly supports: Supports = {
    loadOptions: 'all',
    contextOverflow: ['stop'],
    embeddings: true,
    rerank: false,
    media: true,
    speculative: false,
  };
  private model: ModelInfo | null = null;

  /** `fallback`: used only when the backends before it cannot run the model (router.ts). `idleMs`: IDLE_MS (tests
   * shorten it). */
  constructor(
    readonly remote: RemoteOptions,
    readonly fallback = false,
    private readonly idleMs = IDLE_MS,
  ) {}

  async load(_request: unknown, control: CallControl = {}): Promise<ModelInfo> {
    this.model = null;
    const call = this.watch(control.signal);
    let data: unknown;
    try {
      const res = await this.call('GET', '/models', undefined, call).catch((err) => {
        // A server without the listing still answers chat (some proxies): only an unreachable one fails the load.
        if (err instanceof InvalidRequestError && err.code === 'model_not_found') return null;
        throw err;
      });
      data = ((await res?.json().catch(() => null)) as { data?: unknown } | null)?.data;
    } finally {
      call.done();
    }
    const listed = (Array.isArray(data) ? data : []).filter(
      (m): m is { id?: string; meta?: { n_ctx_train?: number } } => !!m && typeof m === 'object',
    );
    const entry = listed.find((m) => m.id === this.remote.model);
    const warnings =
      listed.length && !entry
        ? [
            `the server lists no model "${this.remote.model}" (it lists ${listed
              .slice(0, 5)
              .map((m) => JSON.stringify(m.id))
              .join(', ')}${listed.length > 5 ? ', …' : ''}); requests name it anyway`,
          ]
        : [];
    this.model = {
      name: this.remote.model,
      description: `served by ${this.remote.baseURL}`,
      architecture: 'remote',
      sizeBytes: 0,
      nParams: 0,
      nCtxTrain: Number.isInteger(entry?.meta?.n_ctx_train) ? entry!.meta!.n_ctx_train! : 0,
      nEmbd: 0,
      nLayer: 0,
      nHead: 0,
      nHeadKv: 0,
      nVocab: 0,
      bosToken: -1,
      eosToken: -1,
      eogTokens: [],
      chatTemplate: null,
      memory: { kind: 'attention', swaWindow: 0 },
      metadata: {},
      promptState: null,
      ...(warnings.length ? { warnings } : {}),
    };
    return this.model;
  }

  async complete(request: CompletionRequest, control: CallControl = {}): Promise<void> {
    this.require();
    const body: Record<string, unknown> = {
      ...request.original,
      messages: await inlineFiles(request.original.messages),
      model: this.remote.model,
      stream: true,
      stream_options: { include_usage: true },
    };
    for (const key of LOCAL_ONLY) delete body[key];
    const sent = performance.now();
    const call = this.watch(control.signal);
    let events: AsyncGenerator<string> | null = null;
    try {
      const res = await this.call('POST', '/chat/completions', body, call);
      let first = 0;
      let finish: ChatCompletionChunk | null = null;
      const totals: Pick<ServerChunk, 'usage' | 'timings'> = {};
      events = sseData(res.body!, this.remote.baseURL);
      for (;;) {
        let next: IteratorResult<string>;
        call.alive(); // the clock runs while the server is waited for, not while a slow reader holds the stream
        try {
          next = await events.next();
        } catch (err) {
          throw call.error(err, (e) => (e instanceof HearthError ? e : ended(this.remote.baseURL, e))); // the body broke off
        }
        call.done();
        if (next.done) break;
        const raw = parse(next.value, this.remote.baseURL);
        if (raw.error) {
          throw serverError(
            500,
            typeof raw.error === 'string' ? { message: raw.error } : raw.error,
            this.remote.baseURL,
          );
        }
        if (raw.usage && typeof raw.usage === 'object') totals.usage = raw.usage;
        if (raw.timings && typeof raw.timings === 'object') totals.timings = raw.timings;
        const chunk = toChunk(raw, this.remote.model, this.remote.baseURL);
        // The usage chunk after the finish is the last: a server that then neither says [DONE] nor closes is not waited
        // for.
        if (!chunk && finish && raw.usage) break;
        if (!chunk) continue;
        first ||= performance.now();
        // The chunk with the finish_reason waits for the usage, which comes after it: Hearth's last chunk carries both.
        if (chunk.choices[0]!.finish_reason) finish = chunk;
        else if (!finish) await control.onChunk?.(chunk); // a consumer's error is its own, passed on as it is
      }
      if (!finish) throw ended(this.remote.baseURL, null);
      await control.onChunk?.(
        finishChunk(finish, totals, { sent, first: first || performance.now(), end: performance.now() }),
      );
    } finally {
      call.done();
      await events?.return(undefined).catch(() => {}); // the response's body is let go, whichever way this ended
    }
  }

  async embed(request: { inputs: string[] }, control: CallControl = {}): Promise<EmbedResult> {
    this.require();
    const call = this.watch(control.signal);
    let body: { data?: Array<{ index: number; embedding: number[] }>; usage?: { prompt_tokens?: number } } | null;
    try {
      const res = await this.call(
        'POST',
        '/embeddings',
        { model: this.remote.model, input: request.inputs, encoding_format: 'float' },
        call,
      );
      body = await res.json().catch((err) => {
        throw call.error(
          err,
          () =>
            new EngineError(
              `the server at ${this.remote.baseURL} answered embeddings that are not JSON`,
              'remote_bad_response',
            ),
        );
      });
    } finally {
      call.done();
    }
    // One vector per input, placed by its index (in order without one): a gap (two at one index) or anything else is
    // not OpenAI's shape.
    const data = body?.data;
    const n = request.inputs.length;
    const vectors: number[][] = [];
    for (const [i, d] of (Array.isArray(data) && data.length === n ? data : []).entries()) {
      const at = d?.index ?? i;
      if (
        !Number.isInteger(at) ||
        at < 0 ||
        at >= n ||
        !Array.isArray(d.embedding) ||
        !d.embedding.every((x) => typeof x === 'number')
      ) {
        break;
      }
      vectors[at] = d.embedding;
    }
    if (vectors.filter(Boolean).length !== n) {
      throw new EngineError(
        `the server at ${this.remote.baseURL} answered embeddings in a shape that is not OpenAI's`,
        'remote_bad_response',
      );
    }
    const tokens = body?.usage?.prompt_tokens;
    return {
      vectors,
      tokens: typeof tokens === 'number' && Number.isFinite(tokens) ? tokens : 0,
      model: this.remote.model,
    };
  }

  rank(): Promise<RankResult> {
    throw new InvalidRequestError(
      'rerank needs the wasm backend: a remote server is not asked for it',
      'unsupported_by_backend',
    );
  }

  /** OpenAI's API has no way to count a chat's tokens (llama-server's /tokenize is its own): not asked. */
  countTokens(): Promise<{ tokens: number }> {
    throw new InvalidRequestError(
      "counting a prompt's tokens needs a backend on this device: a remote server is not asked for it",
      'unsupported_by_backend',
    );
  }

  /** The server's own: no wasm build, threads or KV cache of this device answer here. */
  async info(): Promise<BackendInfo> {
    return {
      backend: 'remote',
      remote: { baseURL: this.remote.baseURL, model: this.remote.model },
      input: ['text', 'image', 'audio'],
      build: null,
      buildReason: 'no WebAssembly build runs: a server answers',
      threads: 0,
      version: VERSION,
      llamaBuild: '',
      wasmSimd: false,
      model: this.model,
      nCtx: this.model?.nCtxTrain ?? 0,
      context: null,
      gpu: null,
      wasmHeap: null,
      kvCache: null,
      capabilities: {
        persistentKv: false,
        batching: true,
        embeddings: true,
        contextShift: false,
        threads: false,
        webgpu: typeof navigator !== 'undefined' && 'gpu' in navigator,
      },
      storage: null,
    };
  }

  async unload(): Promise<void> {
    this.model = null;
    // Requests in flight stop with the model (engine.terminate() unloads too).
    this.stopAll.abort();
    this.stopAll = new AbortController();
  }

  private stopAll = new AbortController();

  /**
   * One call's signal: the caller's abort, the backend's unload, and an idle timeout — a server that stops answering
   * (accepts the connection, then sends nothing) fails the call with EngineError 'remote_timeout' instead of holding
   * it, and every load after it, for ever. alive() restarts the clock on each event of a stream.
   */
  private watch(signal: AbortSignal | undefined) {
    const idle = new AbortController();
    const where = this.remote.baseURL;
    const ms = this.idleMs;
    let timer = setTimeout(() => idle.abort(), ms);
    const any = AbortSignal.any([idle.signal, this.stopAll.signal, ...(signal ? [signal] : [])]);
    return {
      signal: any,
      /** Restarts the clock (before each wait on the server); done() stops it. */
      alive() {
        clearTimeout(timer);
        timer = setTimeout(() => idle.abort(), ms);
      },
      done: () => clearTimeout(timer),
      /** What a failure while waiting on the server means: the caller's abort, the idle timeout, or `otherwise`. */
      error(err: unknown, otherwise: (err: unknown) => HearthError): HearthError {
        if (any.aborted && !idle.signal.aborted) return new AbortError(); // the caller's abort, or an unload
        if (idle.signal.aborted) {
          return new EngineError(`the server at ${where} sent nothing for ${ms / 1000} s`, 'remote_timeout', {
            retryable: true,
          });
        }
        return otherwise(err);
      },
    };
  }

  private require() {
    if (!this.model) throw new InvalidRequestError('no model is loaded: call engine.load(source) first', 'no_model');
  }

  private async call(method: 'GET' | 'POST', path: string, body: unknown, call: Call): Promise<Response> {
    const { baseURL, apiKey, headers } = this.remote;
    let res: Response;
    try {
      res = await fetch(baseURL.replace(/\/+$/, '') + path, {
        method,
        signal: call.signal,
        body: body === undefined ? undefined : JSON.stringify(body),
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
          ...headers,
        },
      });
    } catch (err) {
      throw call.error(err, (e) => unreachable(e, baseURL));
    }
    if (!res.ok) throw await responseError(res, baseURL);
    return res;
  }
}

function parse(data: string, where: string): ServerChunk {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    /* reported below */
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new EngineError(
      `the server at ${where} streamed something that is not a JSON object: ${data.slice(0, 100)}`,
      'remote_bad_response',
    );
  }
  return value as ServerChunk;
}

/** A stream that stopped before the answer's end: the server went away or cut the connection. */
function ended(where: string, err: unknown): EngineError {
  return new EngineError(
    `the server at ${where} ended the stream before the answer's end${err ? ` (${(err as Error).message ?? err})` : ''}; ` +
      'what was streamed so far is all there is',
    'remote_stream_ended',
    { retryable: true },
  );
}

/** Messages as JSON can carry them: an image or audio given as a Blob or File goes as base64 (a data: URL for images).
 */
async function inlineFiles(messages: ChatMessage[]): Promise<ChatMessage[]> {
  const base64 = async (blob: Blob) => bytesToBase64(new Uint8Array(await blob.arrayBuffer()));
  return Promise.all(
    messages.map(async (m) => {
      if (!Array.isArray(m.content) || m.content.every((p) => p.type === 'text')) return m;
      const content = await Promise.all(
        m.content.map(async (p): Promise<ContentPart> => {
          if (p.type === 'image_url' && p.image_url.url instanceof Blob) {
            return {
              type: 'image_url',
              image_url: {
                ...p.image_url,
                url: `data:${p.image_url.url.type || 'image/png'};base64,${await base64(p.image_url.url)}`,
              },
            };
          }
          if (p.type === 'input_audio' && p.input_audio.data instanceof Blob) {
            return { type: 'input_audio', input_audio: { ...p.input_audio, data: await base64(p.input_audio.data) } };
          }
          return p;
        }),
      );
      return { ...m, content };
    }),
  );
}
