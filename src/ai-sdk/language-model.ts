// The AI SDK's LanguageModelV4 over a Hearth engine: doGenerate and doStream call chat.completions.create in this
// process (no HTTP). Hearth's errors (InvalidRequestError, ContextFullError, AbortError, …) reach the caller as they
// are.
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamResult,
} from '@ai-sdk/provider';
import type { HearthEngine } from '../types.ts';
import { hearthMetadata, toFinishReason, toRequest, toUsage } from './convert.ts';
import { toStreamParts } from './stream-parts.ts';

/** What the provider needs of an engine: a page's createEngine(), Node's createNodeEngine(), or the worker's own. */
export type HearthProviderEngine = Pick<HearthEngine, 'chat' | 'embeddings' | 'rerank' | 'info'>;

/** The loaded model's name, learnt from engine.info() and from each response (the engine has one model at a time). */
export interface ModelName {
  current: string | undefined;
}

export const DEFAULT_MODEL_ID = 'hearth';

export class HearthLanguageModel implements LanguageModelV4 {
  readonly specificationVersion = 'v4';
  readonly provider = 'hearth.chat';
  // No URL is taken as it is: the AI SDK downloads a file part's URL before the call, and images and audio reach the
  // engine as bytes (prompt.ts); other files are refused there.
  readonly supportedUrls = {};

  constructor(
    private readonly engine: HearthProviderEngine,
    private readonly id: string | undefined,
    private readonly name: ModelName,
  ) {}

  /** Informational: the id asked for, else the loaded model's name. */
  get modelId(): string {
    return this.id ?? this.name.current ?? DEFAULT_MODEL_ID;
  }

  async doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
    const { request, warnings } = toRequest(options);
    const res = await this.engine.chat.completions.create({ ...request, stream: false, signal: options.abortSignal });
    this.name.current = res.model || this.name.current;
    const choice = res.choices[0]!;
    const m = choice.message;
    const content: LanguageModelV4Content[] = [];
    if (m.reasoning_content) content.push({ type: 'reasoning', text: m.reasoning_content });
    if (m.content) content.push({ type: 'text', text: m.content });
    for (const call of m.tool_calls ?? []) {
      content.push({
        type: 'tool-call',
        toolCallId: call.id,
        toolName: call.function.name,
        input: call.function.arguments || '{}',
      });
    }
    return {
      content,
      finishReason: toFinishReason(choice.finish_reason),
      usage: toUsage(res.usage, !!m.reasoning_content),
      providerMetadata: hearthMetadata(res.timings, res.usage, res.warnings),
      request: { body: request },
      response: { id: res.id, modelId: res.model, timestamp: new Date(res.created * 1000), body: res },
      warnings: [...warnings, ...(res.warnings ?? []).map((message) => ({ type: 'other' as const, message }))],
    };
  }

  async doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
    const { request, warnings } = toRequest(options);
    // include_usage: the stream ends with a chunk carrying the usage, which the finish part reports.
    const chunks = await this.engine.chat.completions.create({
      ...request,
      stream: true,
      stream_options: { include_usage: true },
      signal: options.abortSignal,
    });
    const stream = toStreamParts(chunks, {
      warnings,
      includeRawChunks: options.includeRawChunks === true,
      onModel: (name) => (this.name.current = name || this.name.current),
    });
    return { stream, request: { body: request } };
  }
}
