// The Prompt API (the W3C Web Machine Learning group's `LanguageModel`) over a Hearth engine: code written for
// Chrome's built-in model runs on any browser, on the model the page configures. A session is a conversation on the
// engine: its messages are kept here and sent whole each turn, and the engine's KV cache makes that cost only the new
// tokens (a clone's first turn copies the original's cells in memory). A session created with `hearth: { sessionId }`
// is kept across reloads: its messages in IndexedDB (saved-sessions.ts), its KV state as the engine's conversation of
// that id.
import type { ChatCompletionCreateParams, ChatMessage, HearthEngine, LoadOptions, ModelSource } from '../types.ts';
import { abortable } from '../core/abort.ts';
import { isWebSource, webUrls } from '../core/models/web-source.ts';
import { destroyed, domError, quotaExceeded } from './dom-errors.ts';
import { type Expected, type MessageType, toMessages } from './input.ts';
import { deleteSession, loadSession, saveSession } from './saved-sessions.ts';
import { regexGrammar } from '../core/chat/regex-grammar.ts';

export type Availability = 'unavailable' | 'downloadable' | 'downloading' | 'available';
export type SamplingMode = 'most-predictable' | 'predictable' | 'balanced' | 'creative' | 'most-creative';

export interface PromptApiOptions {
  /** The engine sessions run on, or how to make it (called once, on first use). */
  engine: HearthEngine | (() => Promise<HearthEngine>);
  /** The model: loaded on the first create(), downloaded into the model store the first time. */
  model: ModelSource;
  /** Options of that load (nCtx, projector, …). */
  load?: Omit<LoadOptions, 'signal' | 'onProgress'>;
}

interface Expectation {
  type: string;
  languages?: string[];
}

export interface CreateOptions {
  samplingMode?: SamplingMode;
  expectedInputs?: Expectation[];
  expectedOutputs?: Expectation[];
  initialPrompts?: unknown[];
  signal?: AbortSignal;
  monitor?: (m: EventTarget) => void;
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

/** The LanguageModel class for one configuration: `globalThis.LanguageModel = languageModelClass({ … })`. */
export function languageModelClass(config: PromptApiOptions): LanguageModelClass {
  let engine: Promise<HearthEngine> | null = null;
  let loading: Promise<HearthEngine> | null = null;
  let loaded = false;
  const monitors = new Set<(fraction: number) => void>();
  const getEngine = () =>
    (engine ??= typeof config.engine === 'function' ? config.engine() : Promise.resolve(config.engine));

  /** The engine with the model loaded (one load for every create() that waits on it); progress to the monitors. */
  function ready(): Promise<HearthEngine> {
    loading ??= (async () => {
      const e = await getEngine();
      await e.load(config.model, {
        ...config.load,
        onProgress: (p) => {
          if (p.phase !== 'download' || !p.total) return;
          for (const m of monitors) m(p.loaded / p.total);
        },
      });
      loaded = true;
      return e;
    })();
    loading.catch(() => {
      loading = null; // a failed load is tried again by the next create()
    });
    return loading;
  }

  async function availability(options: CreateOptions = {}): Promise<Availability> {
    if (!supported(options)) return 'unavailable';
    if (loaded) {
      const model = (await (await getEngine()).info()).model;
      return inputsMissing(options, model?.input ?? ['text']) ? 'unavailable' : 'available';
    }
    if (loading) return 'downloading';
    return (await isStored()) ? 'available' : 'downloadable';
  }

  /** Whether the model loads without a download: a local file, or one the model store holds whole under the id the
   * store gives it (a { hf } file's is its resolve URL on the engine's Hub or a mirror: the same path on any host). */
  async function isStored(): Promise<boolean> {
    const m = config.model;
    if (!isWebSource(m)) return true; // a File, a Blob, a path
    let id: string;
    try {
      id = webUrls(m).id;
    } catch {
      return false; // not a source that loads: the load says why
    }
    const path = (url: string) => new URL(url).pathname;
    const list = (await (await getEngine()).models.list().catch(() => [])).filter((s) => s.complete);
    return list.some((s) => (typeof m === 'string' ? s.id === id : path(s.id) === path(id)));
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
      const nav = globalThis.navigator as Navigator & { userActivation?: { hasBeenActive: boolean } };
      if (state === 'downloadable' && nav?.userActivation && !nav.userActivation.hasBeenActive) {
        throw new DOMException('a download needs the user to have interacted with the page', 'NotAllowedError');
      }
      const e = await withMonitor(options, signal);
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
      const stop = new AbortController();
      const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
      let controller!: ReadableStreamDefaultController<string>;
      let wake = () => {};
      const stream = new ReadableStream<string>(
        {
          start: (c) => void (controller = c),
          pull: () => wake(),
          cancel: () => stop.abort(),
        },
        { highWaterMark: 1 },
      );
      /** Resolves once the reader wants more (or the call ends). */
      const room = (s: AbortSignal) =>
        (controller.desiredSize ?? 0) > 0
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              wake = resolve;
              s.addEventListener('abort', () => resolve(), { once: true });
            });
      this.#run(signal, async (s) => {
        const { params, turns } = await this.#request(input, options, s);
        const chunks = await this.#engine.chat.completions.create({ ...params, stream: true, signal: s });
        let text = '';
        for await (const c of chunks) {
          const delta = c.choices[0]?.delta.content;
          if (!delta) continue;
          text += delta;
          await room(s);
          s.throwIfAborted();
          controller.enqueue(delta);
        }
        await this.#answered(turns, text, s);
      })
        .then(
          () => controller.close(),
          (err) => controller.error(err),
        )
        .catch(() => {}); // the reader cancelled: the stream is closed, and nobody is there to tell
      return iterable(stream);
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

  /** The loaded engine, with create()'s monitor told the download's progress (0 first and 1 last, as the
   * specification's monitors are, in steps of 1/65536). */
  async function withMonitor(options: CreateOptions, signal?: AbortSignal): Promise<HearthEngine> {
    if (!options.monitor) return loadedOrAborted(ready(), signal);
    const target = new EventTarget();
    options.monitor(target); // a monitor that throws rejects create() with its error
    let last = -1;
    const tell = (fraction: number) => {
      const loaded = fraction >= 1 ? 1 : Math.floor(fraction * 0x10000) / 0x10000;
      if (loaded <= last || signal?.aborted) return;
      last = loaded;
      target.dispatchEvent(progressEvent(loaded));
    };
    tell(0);
    monitors.add(tell);
    try {
      const e = await loadedOrAborted(ready(), signal);
      tell(1);
      return e;
    } finally {
      monitors.delete(tell);
    }
  }

  const named: LanguageModelClass = LanguageModel;
  return named;
}

/** The stream, async-iterable (`for await`, Array.fromAsync) as the Streams standard has it, where the browser's
 * ReadableStream is not yet (WebKitGTK 2.50). */
function iterable<T>(stream: ReadableStream<T>): ReadableStream<T> {
  if (Symbol.asyncIterator in ReadableStream.prototype) return stream;
  async function* values(this: ReadableStream<T>, { preventCancel = false } = {}) {
    const reader = this.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      if (!preventCancel) await reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }
  return Object.assign(stream, { values, [Symbol.asyncIterator]: values });
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

/** A 'downloadprogress' event: a ProgressEvent where there is one (browsers), else an Event with its fields (Node). */
function progressEvent(loaded: number): Event {
  const init = { loaded, total: 1, lengthComputable: true };
  if (typeof ProgressEvent === 'function') return new ProgressEvent('downloadprogress', init);
  return Object.assign(new Event('downloadprogress'), init);
}

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

/** The model loaded, or the signal's own reason as soon as it aborts (the load goes on for the next create()), as the
 * specification's create() rejects. */
function loadedOrAborted(p: Promise<HearthEngine>, signal?: AbortSignal): Promise<HearthEngine> {
  return abortable(p, signal).catch((err) => {
    throw signal?.aborted ? signal.reason : err;
  });
}

const TYPES = new Set(['text', 'image', 'audio']);

function expectedTypes(options: CreateOptions): MessageType[] {
  return (options.expectedInputs ?? []).map((e) => e.type as MessageType).filter((t) => t !== 'text');
}

/** Whether these options can be served at all: known types, text output, languages this code knows. Throws the
 * specification's TypeError for an unknown type and RangeError for a malformed language tag. */
function supported(options: CreateOptions): boolean {
  const all = [...(options.expectedInputs ?? []), ...(options.expectedOutputs ?? [])];
  for (const e of all) {
    if (!TYPES.has(e?.type) && e?.type !== 'tool-call' && e?.type !== 'tool-response') {
      throw new TypeError(`an expected type is 'text', 'image' or 'audio', not ${JSON.stringify(e?.type)}`);
    }
  }
  const languages = all.flatMap((e) => e.languages ?? []);
  const canonical = Intl.getCanonicalLocales(languages); // RangeError for a malformed tag
  const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
  if (canonical.some((tag) => names.of(tag) === undefined)) return false; // well formed, but no language known
  if (all.some((e) => e.type === 'tool-call' || e.type === 'tool-response')) return false;
  return (options.expectedOutputs ?? []).every((e) => e.type === 'text');
}

/** Whether the session expects media the model does not read. */
function inputsMissing(options: CreateOptions, reads: string[]): boolean {
  return expectedTypes(options).some((t) => !reads.includes(t));
}
