// The Prompt API (the W3C Web Machine Learning group's `LanguageModel`) over a Hearth engine: code written for
// Chrome's built-in model runs on any browser, on the model the page configures. A session is a conversation on the
// engine: its messages are kept here and sent whole each turn, and the engine's KV cache makes that cost only the new
// tokens (a clone's first turn copies the original's cells in memory). A session created with `hearth: { sessionId }`
// is kept across reloads: its messages in IndexedDB (saved-sessions.ts), its KV state as the engine's conversation of
// that id.
import type { ChatCompletionCreateParams, ChatMessage, HearthEngine } from '../types.ts';
import { destroyed, domError, quotaExceeded } from './dom-errors.ts';
import { type Expected, type MessageType, toMessages } from './input.ts';
import { deleteSession, loadSession, saveSession } from './saved-sessions.ts';
import { regexGrammar } from '../core/chat/regex-grammar.ts';
import { sendContent, textStream } from './text-stream.ts';
import { type Availability, type CreateCore, languagesTaken, ModelHost, type PromptApiOptions } from './model-host.ts';

export type { Availability, PromptApiOptions } from './model-host.ts';
export type SamplingMode = 'most-predictable' | 'predictable' | 'balanced' | 'creative' | 'most-creative';

interface Expectation {
  type: string;
  languages?: string[];
}

export interface CreateOptions extends CreateCore {
  samplingMode?: SamplingMode;
  expectedInputs?: Expectation[];
  expectedOutputs?: Expectation[];
  initialPrompts?: unknown[];
  /** Hearth's own: a session kept across reloads under this id (its messages and KV state). */
  hearth?: { sessionId?: string };
}

export interface PromptOptions {
  responseConstraint?: object;
  omitResponseConstraintInput?: boolean;
  signal?: AbortSignal;
}

/** A session, as the Prompt API's IDL has it (`LanguageModel` instances). */
export interface LanguageModelSession extends EventTarget {
  readonly contextUsage: number;
  readonly contextWindow: number;
  readonly samplingMode: SamplingMode;
  oncontextoverflow: ((e: Event) => void) | null;
  prompt(input: unknown, options?: PromptOptions): Promise<string>;
  promptStreaming(input: unknown, options?: PromptOptions): ReadableStream<string>;
  append(input: unknown, options?: { signal?: AbortSignal }): Promise<undefined>;
  measureContextUsage(input: unknown, options?: PromptOptions): Promise<number>;
  clone(options?: { signal?: AbortSignal }): Promise<LanguageModelSession>;
  destroy(): void;
  /** @deprecated contextUsage's older name. */
  readonly inputUsage: number;
  /** @deprecated contextWindow's older name. */
  readonly inputQuota: number;
  /** @deprecated oncontextoverflow's older name. */
  onquotaoverflow: ((e: Event) => void) | null;
  /** @deprecated measureContextUsage's older name. */
  measureInputUsage(input: unknown, options?: PromptOptions): Promise<number>;
}

/** The LanguageModel class itself: its static calls (sessions come from create(), not `new`). */
export interface LanguageModelClass {
  availability(options?: CreateOptions): Promise<Availability>;
  create(options?: CreateOptions): Promise<LanguageModelSession>;
  readonly prototype: LanguageModelSession;
}

/** Temperature and top-k of each sampling mode ('balanced' is llama.cpp's default; 'most-predictable' greedy). */
const SAMPLING: Record<SamplingMode, { temperature: number; top_k: number }> = {
  'most-predictable': { temperature: 0, top_k: 1 },
  predictable: { temperature: 0.4, top_k: 20 },
  balanced: { temperature: 0.8, top_k: 40 },
  creative: { temperature: 1.0, top_k: 64 },
  'most-creative': { temperature: 1.2, top_k: 100 },
};

/** The LanguageModel class for one configuration: `globalThis.LanguageModel = languageModelClass({ … })`; `host`
 * shares its engine and model with the Writing Assistance classes (writing-assistance.ts). */
export function languageModelClass(config: PromptApiOptions, host = new ModelHost(config)): LanguageModelClass {
  async function availability(options: CreateOptions = {}): Promise<Availability> {
    if (!supported(options, config)) return 'unavailable';
    const { availability, reads } = await host.state();
    return reads && inputsMissing(options, reads) ? 'unavailable' : availability;
  }

  class LanguageModel extends EventTarget {
    static availability(options: CreateOptions = {}): Promise<Availability> {
      return Promise.resolve().then(() => availability(options));
    }

    static async create(options: CreateOptions = {}): Promise<LanguageModel> {
      const { signal } = options;
      signal?.throwIfAborted();
      const state = await availability(options);
      if (state === 'unavailable') {
        throw new DOMException('this model does not take the expected inputs or outputs', 'NotSupportedError');
      }
      const e = await host.open(options, state);
      const info = await e.info();
      const window = info.context?.maxCtx ?? info.nCtx;
      if (inputsMissing(options, info.model?.input ?? ['text'])) {
        throw new DOMException(
          'the model reads no such input (it was loaded without a projector)',
          'NotSupportedError',
        );
      }
      const id = options.hearth?.sessionId;
      if (id !== undefined && (typeof id !== 'string' || !id)) throw new TypeError('hearth.sessionId is a string');
      const expected = new Set<MessageType>(['text', ...expectedTypes(options)]);
      const saved = id ? await loadSession(id) : null;
      const mode = saved ? (saved.samplingMode as SamplingMode) : (options.samplingMode ?? 'balanced');
      const session = new LanguageModel(MAKE, e, { expected, mode, window, id: id ?? null });
      if (saved) {
        session.#turns = saved.messages.map((message, i) => ({ message, tokens: saved.tokens[i]! }));
      } else if (options.initialPrompts?.length) {
        const messages = await toMessages(options.initialPrompts, expected, true);
        const turns = await measured(e, messages, signal);
        const usage = total(turns);
        if (usage > window || (await count(e, messages, signal)) > window) {
          throw quotaExceeded('the initial prompts do not fit the context window', usage, window);
        }
        session.#turns = turns;
        await session.#save();
      }
      signal?.throwIfAborted();
      return session;
    }

    #engine: HearthEngine;
    #expected: Expected;
    #mode: SamplingMode;
    #window: number;
    #id: string | null;
    /** The session's messages, each with its tokens as contextUsage counts them. */
    #turns: Turn[] = [];
    #destroyed = false;
    #ended = new AbortController();
    /** Calls run one after another, each on the messages the one before left. */
    #queue: Promise<unknown> = Promise.resolve();
    oncontextoverflow: ((e: Event) => void) | null = null;
    /** @deprecated The specification's older name of oncontextoverflow (Chrome's extensions still have it). */
    onquotaoverflow: ((e: Event) => void) | null = null;

    private constructor(
      token: symbol,
      e: HearthEngine,
      o: { expected: Expected; mode: SamplingMode; window: number; id: string | null },
    ) {
      // As the IDL has it, sessions come from create() and clone() only.
      if (token !== MAKE) throw new TypeError('Illegal constructor: use LanguageModel.create()');
      super();
      this.#engine = e;
      this.#expected = o.expected;
      this.#mode = o.mode;
      this.#window = o.window;
      this.#id = o.id;
    }

    /** The tokens of what the session holds, as Chrome's built-in model counts them: each message's text (and each
     * image or audio as the model reads it), not the chat template's few tokens around each message; whether a
     * turn fits the window is decided on the prompt as the engine reads it, those included. */
    get contextUsage(): number {
      return total(this.#turns);
    }

    get contextWindow(): number {
      return this.#window;
    }

    /** @deprecated contextUsage's older name. */
    get inputUsage(): number {
      return this.contextUsage;
    }

    /** @deprecated contextWindow's older name. */
    get inputQuota(): number {
      return this.#window;
    }

    get samplingMode(): SamplingMode {
      return this.#mode;
    }

    prompt(input: unknown, options: PromptOptions = {}): Promise<string> {
      return this.#run(options.signal, async (signal) => {
        const { params, turns } = await this.#request(input, options, signal);
        const res = await this.#engine.chat.completions.create({ ...params, stream: false, signal });
        const text = res.choices[0]?.message.content ?? '';
        await this.#answered(turns, text, signal);
        return text;
      });
    }

    /**
     * The reply as a stream of text pieces. The call holds the session until the reply ends (or the reader cancels),
     * so a prompt made meanwhile goes on from the whole of it; the engine writes on only as far as the reader reads.
     */
    promptStreaming(input: unknown, options: PromptOptions = {}): ReadableStream<string> {
      if (this.#destroyed) throw destroyed();
      options.signal?.throwIfAborted(); // synchronously, as the specification's streams do
      return textStream(options.signal, (signal, send) =>
        this.#run(signal, async (s) => {
          const { params, turns } = await this.#request(input, options, s);
          const chunks = await this.#engine.chat.completions.create({ ...params, stream: true, signal: s });
          await this.#answered(turns, await sendContent(chunks, send, s), s);
        }),
      );
    }

    append(input: unknown, options: { signal?: AbortSignal } = {}): Promise<undefined> {
      return this.#run(options.signal, async (signal) => {
        const messages = await toMessages(input, this.#expected, this.#turns.length === 0);
        const turns = await measured(this.#engine, messages, signal);
        const all = [...this.#turns, ...turns];
        const usage = total(all);
        if (usage > this.#window || (await count(this.#engine, all.map(messageOf), signal)) > this.#window) {
          throw quotaExceeded('the input does not fit the context window', usage, this.#window);
        }
        this.#turns = all;
        await this.#save();
        return undefined;
      });
    }

    /** The tokens the input would add to contextUsage (a system message may open it: it is measured, not added). */
    measureContextUsage(input: unknown, options: PromptOptions = {}): Promise<number> {
      return this.#run(options.signal, async (signal) =>
        total(await measured(this.#engine, await toMessages(input, this.#expected, true), signal)),
      );
    }

    /** @deprecated measureContextUsage's older name. */
    measureInputUsage(input: unknown, options: PromptOptions = {}): Promise<number> {
      return this.measureContextUsage(input, options);
    }

    clone(options: { signal?: AbortSignal } = {}): Promise<LanguageModel> {
      return this.#run(options.signal, async () => {
        const copy = new LanguageModel(MAKE, this.#engine, {
          expected: this.#expected,
          mode: this.#mode,
          window: this.#window,
          id: null,
        });
        copy.#turns = [...this.#turns];
        return copy;
      });
    }

    /** Ends the session: a call in flight and every later one reject with InvalidStateError (Chrome's, and what the
     * web-platform-tests ask); a kept session's messages and KV state are deleted. */
    destroy(): void {
      if (this.#destroyed) return;
      this.#destroyed = true;
      this.#ended.abort(destroyed());
      if (this.#id) {
        const conversation_id = conversationId(this.#id);
        void deleteSession(this.#id).catch(() => {});
        void this.#engine.cache.clear({ conversation_id }).catch(() => {});
      }
    }

    /** Runs `fn` after the calls before it, with a signal that also ends when the session is destroyed. */
    #run<T>(signal: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
      if (this.#destroyed) return Promise.reject(destroyed());
      if (signal?.aborted) return Promise.reject(signal.reason);
      const both = signal ? AbortSignal.any([signal, this.#ended.signal]) : this.#ended.signal;
      const run = this.#queue.then(() => {
        both.throwIfAborted();
        return fn(both);
      });
      this.#queue = run.catch(() => {});
      return run.catch((err) => {
        throw domError(err, both);
      });
    }

    /** The chat request for a prompt: the session's messages and the input, trimmed to the window (an event). */
    async #request(input: unknown, options: PromptOptions, signal: AbortSignal) {
      const messages = await toMessages(input, this.#expected, this.#turns.length === 0, true);
      // An empty input ([], or messages without content) is a turn with nothing said, which the model still answers.
      if (!messages.length) messages.push({ role: 'user', content: '' });
      const constraint = options.responseConstraint;
      // A RegExp is a grammar here (InvalidRequestError, so NotSupportedError, for what a grammar cannot express).
      const grammar = constraint instanceof RegExp ? regexGrammar(constraint, 'responseConstraint') : null;
      let described = grammar ? `text that matches this regular expression: ${constraint}` : '';
      if (constraint !== undefined && !grammar) {
        try {
          described = `JSON that follows this schema: ${JSON.stringify(constraint)}`;
        } catch {
          throw new DOMException('the responseConstraint is not a JSON schema', 'NotSupportedError');
        }
      }
      if (constraint !== undefined && !options.omitResponseConstraintInput) tell(messages, `Answer with ${described}`);
      const turns = await measured(this.#engine, messages, signal);
      const tokens = total(turns);
      if (tokens > this.#window) throw quotaExceeded('the input does not fit the context window', tokens, this.#window);
      // The oldest turns go (a system prompt stays) until the conversation fits, and the page is told.
      let history = this.#turns;
      const keep = history[0]?.message.role === 'system' ? 1 : 0;
      const fits = async (h: Turn[]) =>
        (await count(this.#engine, [...h, ...turns].map(messageOf), signal)) <= this.#window;
      while (history.length > keep && !(await fits(history))) {
        history = [...history.slice(0, keep), ...history.slice(keep + 1)];
      }
      if (history !== this.#turns) {
        this.#turns = history;
        for (const [type, handler] of [
          ['contextoverflow', this.oncontextoverflow],
          ['quotaoverflow', this.onquotaoverflow],
        ] as const) {
          const event = new Event(type);
          this.dispatchEvent(event);
          handler?.call(this, event);
        }
      }
      const params: ChatCompletionCreateParams = {
        messages: [...history, ...turns].map(messageOf),
        ...SAMPLING[this.#mode],
        ...(this.#id ? { conversation_id: conversationId(this.#id) } : {}),
        ...(grammar
          ? { grammar }
          : constraint !== undefined
            ? {
                response_format: {
                  type: 'json_schema',
                  json_schema: { name: 'response', schema: constraint as never },
                },
              }
            : {}),
      };
      return { params, turns };
    }

    /** After an answer: the input and the reply join the session (the reply counted as its text, a prefix's with it). */
    async #answered(turns: Turn[], text: string, signal: AbortSignal) {
      const prefix = turns.at(-1)?.message.prefix ? turns.pop()!.message.content : '';
      const reply: ChatMessage = { role: 'assistant', content: `${prefix}${text}` };
      this.#turns = [...this.#turns, ...turns, ...(await measured(this.#engine, [reply], signal))];
      await this.#save();
    }

    async #save() {
      if (!this.#id) return;
      await saveSession(this.#id, {
        messages: this.#turns.map(messageOf),
        tokens: this.#turns.map((t) => t.tokens),
        samplingMode: this.#mode,
      });
    }
  }

  Object.defineProperty(LanguageModel.prototype, Symbol.toStringTag, { value: 'LanguageModel', configurable: true });
  const named: LanguageModelClass = LanguageModel;
  return named;
}

/** Adds `instruction` to the user's last message before the reply (its own message where there is none: templates
 * that want roles to alternate refuse two user messages in a row). */
function tell(messages: ChatMessage[], instruction: string) {
  const at = messages.at(-1)?.prefix ? messages.length - 2 : messages.length - 1;
  const m = messages[at];
  if (m?.role !== 'user') {
    messages.splice(at + 1, 0, { role: 'user', content: instruction });
  } else if (typeof m.content === 'string' || m.content === null) {
    messages[at] = { ...m, content: m.content ? `${m.content}\n\n${instruction}` : instruction };
  } else {
    messages[at] = { ...m, content: [...m.content, { type: 'text', text: `\n\n${instruction}` }] };
  }
}

/** What the constructor asks for: only this module makes sessions. */
const MAKE = Symbol('LanguageModel');

/** The engine's conversation that holds a kept session's KV state. */
const conversationId = (sessionId: string) => `prompt-api:${sessionId}`;

/** A session's message and its tokens as contextUsage counts them. */
interface Turn {
  message: ChatMessage;
  tokens: number;
}

const messageOf = (t: Turn) => t.message;
const total = (turns: Turn[]) => turns.reduce((n, t) => n + t.tokens, 0);

/** The tokens the prompt of `messages` takes as the model reads it, the chat template's included (0 for none). */
async function count(e: HearthEngine, messages: ChatMessage[], signal: AbortSignal | undefined): Promise<number> {
  if (!messages.length) return 0;
  return (await e.countTokens({ messages, ...(signal ? { signal } : {}) })).prompt_tokens;
}

/** Each message with the tokens of what it says: its texts on their own, and each image or audio as the model reads
 * it (the prompt with it less the prompt without). */
async function measured(e: HearthEngine, messages: ChatMessage[], signal: AbortSignal | undefined): Promise<Turn[]> {
  const text = async (t: string) =>
    t ? (await e.countTokens({ text: t, ...(signal ? { signal } : {}) })).prompt_tokens : 0;
  const turns: Turn[] = [];
  for (const message of messages) {
    let tokens = 0;
    const parts = typeof message.content === 'string' ? [message.content] : (message.content ?? []);
    for (const part of parts) {
      if (typeof part === 'string') tokens += await text(part);
      else if (part.type === 'text') tokens += await text(part.text);
      else {
        const empty: ChatMessage[] = [{ role: 'user', content: '' }];
        tokens += (await count(e, [{ role: 'user', content: [part] }], signal)) - (await count(e, empty, signal));
      }
    }
    turns.push({ message, tokens });
  }
  return turns;
}

const TYPES = new Set(['text', 'image', 'audio']);

function expectedTypes(options: CreateOptions): MessageType[] {
  return (options.expectedInputs ?? []).map((e) => e.type as MessageType).filter((t) => t !== 'text');
}

/** Whether these options can be served at all: known types, text output, languages this code knows. Throws the
 * specification's TypeError for an unknown type and RangeError for a malformed language tag. */
function supported(options: CreateOptions, config: PromptApiOptions): boolean {
  const all = [...(options.expectedInputs ?? []), ...(options.expectedOutputs ?? [])];
  for (const e of all) {
    if (!TYPES.has(e?.type) && e?.type !== 'tool-call' && e?.type !== 'tool-response') {
      throw new TypeError(`an expected type is 'text', 'image' or 'audio', not ${JSON.stringify(e?.type)}`);
    }
  }
  if (
    !languagesTaken(
      all.flatMap((e) => e.languages ?? []),
      config,
    )
  )
    return false; // well formed, not the model's
  if (all.some((e) => e.type === 'tool-call' || e.type === 'tool-response')) return false;
  return (options.expectedOutputs ?? []).every((e) => e.type === 'text');
}

/** Whether the session expects media the model does not read. */
function inputsMissing(options: CreateOptions, reads: string[]): boolean {
  return expectedTypes(options).some((t) => !reads.includes(t));
}
