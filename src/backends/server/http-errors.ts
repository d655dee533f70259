// A server's failures as Hearth's typed errors, so a page handles a remote answer's errors as it handles the wasm
// engine's: a refused request is an InvalidRequestError, a prompt over the server's context a ContextFullError, an
// unreachable or failing server an EngineError with details.retryable.
import { ContextFullError, EngineError, type HearthError, InvalidRequestError } from '../../errors.ts';

/** The `error` of an OpenAI error body; llama-server adds its context numbers. */
export interface ServerErrorBody {
  message?: string;
  type?: string;
  code?: string | number | null;
  param?: string | null;
  n_prompt_tokens?: number;
  n_ctx?: number;
}

export function serverError(status: number, body: ServerErrorBody | undefined, where: string): HearthError {
  const said = body?.message ? `: ${body.message}` : '';
  const code = typeof body?.code === 'string' ? body.code : null;
  const details = { status, ...(body?.param ? { param: body.param } : {}) };
  if (code === 'context_length_exceeded' || body?.type === 'exceed_context_size_error') {
    return new ContextFullError(`the prompt does not fit the context of the server at ${where}${said}`, {
      promptTokens: body?.n_prompt_tokens ?? 0,
      nCtx: body?.n_ctx ?? 0,
    });
  }
  if (status === 401 || status === 403) {
    return new EngineError(
      `the server at ${where} refused the credentials (HTTP ${status})${said}: check the remote apiKey and headers`,
      'remote_unauthorized',
      details,
    );
  }
  if (status === 404) {
    return new InvalidRequestError(
      `the server at ${where} has no such model or route (HTTP 404)${said}: check the remote model and baseURL`,
      'model_not_found',
      details,
    );
  }
  if (status === 429 || status >= 500) {
    return new EngineError(
      `the server at ${where} failed (HTTP ${status})${said}`,
      status === 429 ? 'remote_rate_limited' : 'remote_error',
      { ...details, retryable: true },
    );
  }
  // The server's own code is its vocabulary, not Hearth's: it goes in details.serverCode.
  if (status >= 400) {
    return new InvalidRequestError(
      `the server at ${where} refused the request (HTTP ${status})${said}`,
      'remote_invalid_request',
      { ...details, ...(code ? { serverCode: code } : {}) },
    );
  }
  return new EngineError(`the server at ${where} answered HTTP ${status}${said}`, 'remote_error', details);
}

/** A fetch that failed for another reason than an abort or the idle timeout (server.ts tells those apart): the server
 * is out of reach. */
export function unreachable(err: unknown, where: string): HearthError {
  return new EngineError(
    `could not reach the server at ${where} (${(err as Error)?.message ?? err}): check that it runs, that ` +
      "it allows this page's origin (CORS) and that the page's Content-Security-Policy allows it (connect-src)",
    'remote_unreachable',
    { retryable: true },
  );
}

/** The error of a response that failed, from its body when it has OpenAI's shape. */
export async function responseError(res: Response, where: string): Promise<HearthError> {
  const text = await res.text().catch(() => '');
  let body: ServerErrorBody | undefined;
  try {
    const parsed = JSON.parse(text) as { error?: ServerErrorBody | string };
    body = typeof parsed.error === 'string' ? { message: parsed.error } : parsed.error;
  } catch {
    body = text ? { message: text.slice(0, 300) } : undefined;
  }
  return serverError(res.status, body, where);
}
