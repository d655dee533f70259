// chat.completions: the OpenAI-shaped request, messages, tools, and the completion and its chunks.
import type { Progress, SpeculativeOptions } from './options.ts';

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/** A message's content parts, as OpenAI's API takes them (images and audio need a model loaded with a projector). */
export type ContentPart = TextPart | ImagePart | AudioPart;

export interface TextPart {
  type: 'text';
  text: string;
}

/** An image: a data: URL, an http(s) URL (fetched by the engine), or the file itself (Blob, File). */
export interface ImagePart {
  type: 'image_url';
  image_url: { url: string | Blob; detail?: 'auto' | 'low' | 'high' };
}

/** An audio clip: base64 of the file (OpenAI's form), or the file itself. WAV and MP3 (FLAC also decodes). */
export interface AudioPart {
  type: 'input_audio';
  input_audio: { data: string | Blob; format: 'wav' | 'mp3' | 'flac' };
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: Role;
  content: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** An earlier assistant turn's reasoning, for templates that render it (Kimi, MiniMax, Nemotron, Cohere2, …). */
  reasoning_content?: string | null;
  /** On the last message, an assistant's: the reply continues this text (the reply's content is what follows it),
   * and a response_format or grammar holds for the two together (as DeepSeek's and Mistral's APIs have it). */
  prefix?: boolean;
}

export interface Tool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** 'auto': the model may call tools; 'none': it answers in text; 'required': it calls at least one; a named
 * function: it calls that one. 'required' and named choices are enforced with a grammar. */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** 'json_object': any JSON object; 'json_schema': JSON valid against the schema. Both are enforced with a grammar. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null };
    };

/** A tool call as it streams: the first delta of a call has its id, type and name; later ones add to its arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface TopLogprob {
  token: string;
  logprob: number;
  /** The token's UTF-8 bytes (a token may hold part of a character). */
  bytes: number[] | null;
}

export interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

export interface ChoiceLogprobs {
  content: TokenLogprob[] | null;
}

export interface ChatCompletionCreateParams {
  messages: ChatMessage[];
  model?: string;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  repeat_penalty?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  /** Tokens the penalties look back over. Default 64. */
  repeat_last_n?: number | null;
  stop?: string | string[] | null;
  seed?: number | null;
  stream?: boolean | null;
  /** include_usage: a stream ends with one more chunk, with no choices, carrying `usage` (OpenAI's shape). */
  stream_options?: { include_usage?: boolean | null } | null;
  tools?: Tool[];
  /** Default 'auto' with tools, 'none' without. */
  tool_choice?: ToolChoice | null;
  /** false: at most one tool call per reply (default true). */
  parallel_tool_calls?: boolean | null;
  response_format?: ResponseFormat | null;
  /** A GBNF grammar (llama.cpp's syntax, start rule `root`) the reply must follow; not with response_format. */
  grammar?: string | null;
  /** Return each generated token's log-probability (from the logits before sampling). */
  logprobs?: boolean | null;
  /** With logprobs: the 0–20 likeliest tokens at each step too. */
  top_logprobs?: number | null;
  /** Extra variables for the chat template, as llama.cpp's server takes them: e.g. {enable_thinking: false} turns
   * reasoning off on templates that have the switch (Qwen3, SmolLM3, …). */
  chat_template_kwargs?: Record<string, unknown> | null;
  /** gpt-oss's reasoning level, passed to its template. */
  reasoning_effort?: 'low' | 'medium' | 'high' | null;
  /** Names the conversation: its KV state is kept (and saved) under this id. Without it, conversations are matched by
   * content. */
  conversation_id?: string;
  signal?: AbortSignal;
  /** Progress of the work before the first token: 'restore' (bytes of saved state) and 'prefill' (prompt tokens). */
  onProgress?: (p: Progress) => void;
  /** When the reply fills the context (and it cannot grow): 'stop' ends it with finish_reason 'length' (default);
   * 'error' fails it with ContextFullError; 'shift' drops the oldest half of the tokens after n_keep and goes on. */
  context_overflow?: 'stop' | 'error' | 'shift' | null;
  /** With 'shift': prompt tokens at the start that are never dropped. Default: the rendered system prompt. */
  n_keep?: number | null;
  /** Speculative decoding for this request; null turns off the engine's (LoadOptions.speculative). */
  speculative?: SpeculativeOptions | null;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** Where a prompt's cached tokens came from: 'prompt-state' is a state shipped with the model
 * (LoadOptions.promptState). */
export type CacheSource = 'none' | 'memory' | 'indexeddb' | 'prompt-state';

export interface Timings {
  /** Prompt tokens decoded for this request (those not taken from a cache). */
  prompt_n: number;
  prompt_ms: number;
  predicted_n: number;
  predicted_ms: number;
  /** Prompt tokens taken from a cache instead of being decoded. */
  cache_n: number;
  /** 'remote': the cache of the server that answered (EngineOptions.backend / fallback { remote }). */
  cache_source: CacheSource | 'remote';
  /** Time the projector spent encoding this request's images and audio (part of prompt_ms); set when the request has
   * media, 0 when every one came from the cache. */
  media_ms?: number;
  /** With speculative decoding: tokens guessed, and those of them the model chose too (llama-server's names). */
  draft_n?: number;
  draft_n_accepted?: number;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  /** With speculative decoding: guessed tokens the reply kept and those it did not (OpenAI's predicted outputs'). */
  completion_tokens_details?: { accepted_prediction_tokens: number; rejected_prediction_tokens: number };
}

export interface AssistantMessage {
  role: 'assistant';
  /** null when the reply is only tool calls. */
  content: string | null;
  /** The model's reasoning (<think>…</think>, gpt-oss's analysis channel), apart from the answer. */
  reasoning_content?: string;
  tool_calls?: ToolCall[];
  /** Always null: a local model has no separate refusal channel (OpenAI's field, which its SDK's types require). */
  refusal: null;
}

export interface ChunkDelta {
  role?: 'assistant';
  content?: string;
  reasoning_content?: string;
  tool_calls?: ToolCallDelta[];
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: AssistantMessage;
    finish_reason: FinishReason;
    logprobs: ChoiceLogprobs | null;
  }>;
  usage: Usage;
  timings: Timings;
  /** Why the engine did something other than what was asked (e.g. a context shift it could not make). */
  warnings?: string[];
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  /** Empty only in the usage chunk that ends a stream with stream_options.include_usage. */
  choices: Array<{
    index: number;
    delta: ChunkDelta;
    finish_reason: FinishReason | null;
    logprobs: ChoiceLogprobs | null;
  }>;
  /** With stream_options.include_usage: null on every chunk but the last, which carries it (and no choices), as
   * OpenAI sends it. Absent without it. */
  usage?: Usage | null;
  /** Only on the chunk with the finish_reason (Hearth's extension, as llama-server's). */
  timings?: Timings;
  /** Only on the chunk with the finish_reason, and only when there are any (see ChatCompletion.warnings). */
  warnings?: string[];
}

export interface ChatCompletions {
  create(params: ChatCompletionCreateParams & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
  create(params: ChatCompletionCreateParams & { stream?: false | null }): Promise<ChatCompletion>;
  create(params: ChatCompletionCreateParams): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>;
}
