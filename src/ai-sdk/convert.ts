// The AI SDK's call options as a chat.completions.create request, and Hearth's usage, finish reasons and timings as
// the AI SDK's. What has no equivalent becomes a warning, so the caller sees it instead of guessing.
import type {
  JSONObject,
  LanguageModelV4CallOptions,
  LanguageModelV4FinishReason,
  LanguageModelV4Usage,
  SharedV4ProviderMetadata,
  SharedV4Warning,
} from '@ai-sdk/provider';
import type { ChatCompletionCreateParams, Tool, ToolChoice, Timings, Usage } from '../types.ts';
import { toMessages } from './to-messages.ts';

/** Hearth's own request parameters a caller may pass as providerOptions.hearth (named as in chat.completions.create).
 */
const HEARTH_OPTIONS = [
  'conversation_id',
  'min_p',
  'repeat_penalty',
  'repeat_last_n',
  'chat_template_kwargs',
  'reasoning_effort',
  'parallel_tool_calls',
  'context_overflow',
  'n_keep',
  'grammar',
] as const;

export type HearthRequest = Omit<ChatCompletionCreateParams, 'stream' | 'signal' | 'onProgress'>;

export function toRequest(options: LanguageModelV4CallOptions): {
  request: HearthRequest;
  warnings: SharedV4Warning[];
} {
  const warnings: SharedV4Warning[] = [];
  const request: HearthRequest = { messages: toMessages(options.prompt) };
  const set = <K extends keyof HearthRequest>(key: K, value: HearthRequest[K] | undefined) => {
    if (value !== undefined) request[key] = value;
  };
  set('max_tokens', options.maxOutputTokens);
  set('temperature', options.temperature);
  set('top_p', options.topP);
  set('top_k', options.topK);
  set('presence_penalty', options.presencePenalty);
  set('frequency_penalty', options.frequencyPenalty);
  set('seed', options.seed);
  if (options.stopSequences?.length) request.stop = options.stopSequences;

  const tools = toTools(options.tools, warnings);
  if (tools.length) {
    request.tools = tools;
    // The SDK always names a choice ({type: 'auto'} by default): it matters only with tools.
    set('tool_choice', toToolChoice(options.toolChoice));
  }

  const format = options.responseFormat;
  if (format?.type === 'json') {
    request.response_format = format.schema
      ? {
          type: 'json_schema',
          json_schema: {
            name: format.name ?? 'response',
            description: format.description,
            schema: format.schema as Record<string, unknown>,
            strict: true,
          },
        }
      : { type: 'json_object' };
  }

  reasoning(options.reasoning, request, warnings);
  hearthOptions(options.providerOptions?.hearth, request, warnings);
  return { request, warnings };
}

function toTools(tools: LanguageModelV4CallOptions['tools'], warnings: SharedV4Warning[]): Tool[] {
  const out: Tool[] = [];
  for (const t of tools ?? []) {
    if (t.type !== 'function') {
      warnings.push({
        type: 'unsupported',
        feature: `provider tool ${t.id}`,
        details: 'Hearth runs function tools only; this tool was left out.',
      });
      continue;
    }
    if (t.inputExamples?.length) {
      warnings.push({
        type: 'unsupported',
        feature: 'inputExamples',
        details: `tool ${t.name}: the examples were not sent to the model`,
      });
    }
    out.push({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.inputSchema as Record<string, unknown> },
    });
  }
  return out;
}

function toToolChoice(choice: LanguageModelV4CallOptions['toolChoice']): ToolChoice | undefined {
  if (!choice) return undefined;
  return choice.type === 'tool' ? { type: 'function', function: { name: choice.toolName } } : choice.type;
}

/** The SDK's reasoning levels: 'none' is the template switch Qwen3 and others have; the levels are gpt-oss's. */
function reasoning(
  level: LanguageModelV4CallOptions['reasoning'],
  request: HearthRequest,
  warnings: SharedV4Warning[],
) {
  if (level === undefined || level === 'provider-default') return;
  if (level === 'none') {
    request.chat_template_kwargs = { enable_thinking: false };
    return;
  }
  const effort = level === 'minimal' ? 'low' : level === 'xhigh' || level === 'max' ? 'high' : level;
  if (effort !== level) {
    warnings.push({ type: 'compatibility', feature: 'reasoning', details: `"${level}" was sent as "${effort}"` });
  }
  request.reasoning_effort = effort;
}

function hearthOptions(options: JSONObject | undefined, request: HearthRequest, warnings: SharedV4Warning[]) {
  for (const [key, value] of Object.entries(options ?? {})) {
    if (value === undefined) continue;
    if (!(HEARTH_OPTIONS as readonly string[]).includes(key)) {
      warnings.push({
        type: 'unsupported',
        feature: `providerOptions.hearth.${key}`,
        details: `known options: ${HEARTH_OPTIONS.join(', ')}`,
      });
      continue;
    }
    if (key === 'chat_template_kwargs') {
      request.chat_template_kwargs = { ...request.chat_template_kwargs, ...(value as Record<string, unknown>) };
    } else {
      // Checked by Hearth itself, which names the parameter in its InvalidRequestError.
      (request as Record<string, unknown>)[key] = value;
    }
  }
}

export function toFinishReason(reason: string | null | undefined): LanguageModelV4FinishReason {
  switch (reason) {
    case 'stop':
      return { unified: 'stop', raw: reason };
    case 'length':
      return { unified: 'length', raw: reason };
    case 'tool_calls':
      return { unified: 'tool-calls', raw: reason };
    case 'content_filter':
      return { unified: 'content-filter', raw: reason };
    // No finish_reason at all: the stream ended before the engine said it was done.
    case null:
    case undefined:
      return { unified: 'interrupted', raw: undefined };
    default:
      return { unified: 'other', raw: reason };
  }
}

export function toUsage(usage: Usage | undefined, hadReasoning: boolean): LanguageModelV4Usage {
  if (!usage) {
    return {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
    };
  }
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    // cacheRead: prompt tokens taken from Hearth's KV cache (memory, IndexedDB or a shipped prompt state).
    inputTokens: {
      total: usage.prompt_tokens,
      noCache: usage.prompt_tokens - cached,
      cacheRead: cached,
      cacheWrite: undefined,
    },
    // Hearth does not count reasoning tokens apart: the split is known only when there was no reasoning.
    outputTokens: {
      total: usage.completion_tokens,
      text: hadReasoning ? undefined : usage.completion_tokens,
      reasoning: hadReasoning ? undefined : 0,
    },
    raw: { ...usage, prompt_tokens_details: { ...usage.prompt_tokens_details } },
  };
}

/** providerMetadata.hearth: the timings (prompt/predicted tokens and ms, where the cached prefix came from), the
 * cached prompt tokens, and the engine's warnings when it has any. */
export function hearthMetadata(
  timings: Timings | undefined,
  usage: Usage | undefined,
  engineWarnings: string[] | undefined,
): SharedV4ProviderMetadata {
  const hearth: JSONObject = {};
  if (timings) hearth.timings = { ...timings };
  if (usage) hearth.cachedTokens = usage.prompt_tokens_details?.cached_tokens ?? 0;
  if (engineWarnings?.length) hearth.warnings = engineWarnings;
  return { hearth };
}
