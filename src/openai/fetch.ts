// OpenAI's HTTP API answered by a Hearth engine, as a `fetch`: a client written for OpenAI (the `openai` SDK, the AI
// SDK's OpenAI-compatible provider, LangChain…) takes it in place of the network and its requests never leave the page.
// The routes are matched by the end of the path, so any baseURL works; the `model` a request names is not checked
// (the engine answers with the model it has loaded, as llama-server does with one model).
import { HearthError } from '../errors.ts';
import type { ChatCompletionCreateParams, EmbeddingCreateParams, HearthEngine } from '../types.ts';

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** OpenAI's error body, with the status it comes with. */
interface ApiError {
  status: number;
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function openAIFetch(engine: HearthEngine): Fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const path = new URL(request.url).pathname.replace(/\/+$/, '');
    try {
      if (request.method === 'POST' && path.endsWith('/chat/completions')) return await chat(engine, request);
      if (request.method === 'POST' && path.endsWith('/embeddings')) return await embeddings(engine, request);
      if (request.method === 'GET' && /\/models(\/[^/]+)?$/.test(path)) return await models(engine, path);
      return reply(
        failure(
          404,
          `Unknown request URL: ${request.method} ${path}. Hearth answers POST /chat/completions, POST /embeddings and GET /models.`,
          'unknown_url',
        ),
      );
    } catch (err) {
      // An abort rejects, as fetch does; everything else is an HTTP error the client turns into its own.
      if (isAbort(err, request.signal)) throw err;
      return reply(apiError(err));
    }
  };
}

async function chat(engine: HearthEngine, request: Request): Promise<Response> {
  const body = await jsonBody<ChatCompletionCreateParams & { n?: number | null }>(request);
  if (body.n !== undefined && body.n !== null && body.n !== 1) {
    return reply(failure(400, 'n: only 1 choice per request is supported', 'invalid_parameter', 'n'));
  }
  const params = { ...body, signal: request.signal };
  if (body.stream !== true) return json(await engine.chat.completions.create({ ...params, stream: false }));
  const chunks = (await engine.chat.completions.create({ ...params, stream: true }))[Symbol.asyncIterator]();
  const encoder = new TextEncoder();
  const event = (data: unknown) => encoder.encode(`data: ${JSON.stringify(data)}\n\n`);
  // Pulled: the engine generates as fast as the client reads (the chunk stream has back-pressure of its own).
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await chunks.next();
        if (next.done) {
          controller.enqueue(encoder.encode('data: [DONE]\n\n'));
          controller.close();
        } else {
          controller.enqueue(event(next.value));
        }
      } catch (err) {
        if (isAbort(err, request.signal)) return controller.error(err);
        // After the headers an error can only travel in the stream: OpenAI sends it as an event with `error`, which
        // its SDK throws as an APIError.
        controller.enqueue(event({ error: apiError(err).error }));
        controller.close();
      }
    },
    async cancel() {
      await chunks.return?.(); // the reader left: stop generating
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  });
}

async function embeddings(engine: HearthEngine, request: Request): Promise<Response> {
  const body = await jsonBody<EmbeddingCreateParams>(request);
  return json(await engine.embeddings.create({ ...body, signal: request.signal }));
}

async function models(engine: HearthEngine, path: string): Promise<Response> {
  const model = (await engine.info()).model;
  const entry = model && { id: model.name, object: 'model', created: 0, owned_by: 'hearth' };
  const asked = /\/models\/([^/]+)$/.exec(path)?.[1];
  if (asked === undefined) return json({ object: 'list', data: entry ? [entry] : [] });
  const id = decodeURIComponent(asked);
  if (entry?.id === id) return json(entry);
  return reply(
    failure(
      404,
      `The model \`${id}\` is not loaded${model ? `: this engine has ${model.name}` : ''}.`,
      'model_not_found',
      'model',
    ),
  );
}

async function jsonBody<T>(request: Request): Promise<T> {
  let body: unknown;
  try {
    body = JSON.parse(await request.text());
  } catch {
    throw new HttpError(failure(400, 'The request body is not valid JSON.', 'invalid_json'));
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(failure(400, 'The request body must be a JSON object.', 'invalid_json'));
  }
  return body as T;
}

class HttpError extends Error {
  constructor(readonly response: ApiError) {
    super(response.error.message);
  }
}

function failure(status: number, message: string, code: string | null, param: string | null = null): ApiError {
  return { status, error: { message, type: status < 500 ? 'invalid_request_error' : 'server_error', param, code } };
}

/** Hearth's typed errors as OpenAI's: a bad request or a full context 400, no model 404, the rest 500. */
export function apiError(err: unknown): ApiError {
  if (err instanceof HttpError) return err.response;
  if (!(err instanceof HearthError)) return failure(500, (err as Error)?.message ?? String(err), 'engine_error');
  const param = typeof err.details.param === 'string' ? err.details.param : null;
  switch (err.name) {
    case 'ContextFullError':
      return failure(400, err.message, 'context_length_exceeded', 'messages');
    case 'InvalidRequestError':
      return err.code === 'no_model'
        ? failure(404, err.message, 'model_not_found', 'model')
        : failure(400, err.message, err.code, param);
    default:
      return failure(500, err.message, err.code, param);
  }
}

function isAbort(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (err as Error)?.name === 'AbortError';
}

function reply({ status, error }: ApiError): Response {
  return json({ error }, status);
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}
