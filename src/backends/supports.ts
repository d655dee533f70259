// The one place a call is checked against what the backend it goes to supports (contract.ts Supports), so a backend
// never receives, and never silently ignores, an option it cannot honour.
import type { Backend, LoadRequest, ResolvedRequest, Supports } from '../contract.ts';
import { InvalidRequestError } from '../errors.ts';

/** The wasm engine: every option and call. */
export const EVERYTHING: Supports = {
  loadOptions: 'all',
  contextOverflow: ['stop', 'error', 'shift'],
  embeddings: true,
  rerank: true,
  media: true,
  speculative: true,
};

/** Why `backend` cannot take this load (an option it does not act on), or null. */
export function loadRefusal(backend: Backend, { options }: LoadRequest): { message: string; param: string } | null {
  const { loadOptions } = backend.supports;
  if (loadOptions === 'all') return null;
  for (const [param, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const takes = loadOptions[param as keyof typeof options] as true | ((v: unknown) => boolean) | undefined;
    if (takes === true || takes?.(value)) continue;
    return {
      message: `the '${backend.kind}' backend does not support the load option ${param}${takes ? ` = ${JSON.stringify(value)}` : ''}`,
      param,
    };
  }
  return null;
}

/** Throws InvalidRequestError 'unsupported_by_backend' for a call `backend` cannot honour. */
export function checkLoad(backend: Backend, request: LoadRequest): void {
  const refusal = loadRefusal(backend, request);
  if (refusal) throw unsupported(`${refusal.message}: leave it out, or use backend 'wasm'`, refusal.param);
}

export function checkCompletion(
  backend: Backend,
  request: Pick<ResolvedRequest, 'contextOverflow' | 'messages' | 'speculative'>,
): void {
  if (request.speculative && !backend.supports.speculative) {
    throw unsupported(
      `speculative decoding needs the wasm backend: the '${backend.kind}' backend decodes one token at a time`,
      'speculative',
    );
  }
  if (!backend.supports.contextOverflow.includes(request.contextOverflow)) {
    throw unsupported(
      `context_overflow "${request.contextOverflow}" needs the wasm backend: the '${backend.kind}' backend ` +
        `offers ${backend.supports.contextOverflow.map((m) => `"${m}"`).join(', ')}`,
      'context_overflow',
    );
  }
  const media = request.messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type !== 'text'));
  if (media && !backend.supports.media) {
    throw unsupported(
      `images and audio need the wasm backend (with a projector) or a server: the '${backend.kind}' backend reads text only`,
      'messages',
    );
  }
}

export function checkCall(backend: Backend, call: 'embeddings' | 'rerank'): void {
  if (!backend.supports[call]) {
    throw unsupported(`${call} need the wasm backend: the '${backend.kind}' backend does not offer them`);
  }
}

const unsupported = (message: string, param?: string) =>
  new InvalidRequestError(message, 'unsupported_by_backend', param ? { param } : {});
