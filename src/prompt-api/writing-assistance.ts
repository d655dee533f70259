// The Writing Assistance APIs (Summarizer, Writer, Rewriter: the W3C Web Machine Learning group's, the Prompt API's
// shape) over a Hearth engine, on the model and engine of the configuration's LanguageModel (one ModelHost). Each
// call is one chat request: a system prompt made of the object's options (type or tone, format, length, shared
// context, output language) — the same for every call, so the engine's cache reads it once — then the input and its
// context. Nothing is kept between calls, and calls run side by side (the engine batches them).
import type { ChatMessage, HearthEngine } from '../types.ts';
import { domError, quotaExceeded } from './dom-errors.ts';
import { type Availability, type CreateCore, languagesTaken, type ModelHost } from './model-host.ts';
import { sendContent, textStream } from './text-stream.ts';

export interface WritingCreateOptions extends CreateCore {
  sharedContext?: string;
  expectedInputLanguages?: string[];
  expectedContextLanguages?: string[];
  outputLanguage?: string;
  /** The task's own options: type / tone, format, length. */
  [option: string]: unknown;
}

export interface WritingCallOptions {
  context?: string;
  signal?: AbortSignal;
}

/** A Summarizer, Writer or Rewriter, as the IDL has them; its call is `summarize`, `write` or `rewrite`. */
export interface WritingTask {
  readonly sharedContext: string;
  readonly expectedInputLanguages: readonly string[] | null;
  readonly expectedContextLanguages: readonly string[] | null;
  readonly outputLanguage: string | null;
  readonly inputQuota: number;
  measureInputUsage(input: string, options?: WritingCallOptions): Promise<number>;
  destroy(): void;
}

export interface Summarizer extends WritingTask {
  readonly type: 'tldr' | 'teaser' | 'key-points' | 'headline';
  readonly format: 'plain-text' | 'markdown';
  readonly length: 'short' | 'medium' | 'long';
  readonly preference: 'auto' | 'speed' | 'capability';
  summarize(input: string, options?: WritingCallOptions): Promise<string>;
  summarizeStreaming(input: string, options?: WritingCallOptions): ReadableStream<string>;
}

export interface Writer extends WritingTask {
  readonly tone: 'formal' | 'neutral' | 'casual';
  readonly format: 'plain-text' | 'markdown';
  readonly length: 'short' | 'medium' | 'long';
  write(input: string, options?: WritingCallOptions): Promise<string>;
  writeStreaming(input: string, options?: WritingCallOptions): ReadableStream<string>;
}

export interface Rewriter extends WritingTask {
  readonly tone: 'as-is' | 'more-formal' | 'more-casual';
  readonly format: 'as-is' | 'plain-text' | 'markdown';
  readonly length: 'as-is' | 'shorter' | 'longer';
  rewrite(input: string, options?: WritingCallOptions): Promise<string>;
  rewriteStreaming(input: string, options?: WritingCallOptions): ReadableStream<string>;
}

/** One of the classes: its static calls. */
export interface WritingTaskClass<T extends WritingTask> {
  availability(options?: WritingCreateOptions): Promise<Availability>;
  create(options?: WritingCreateOptions): Promise<T>;
  readonly prototype: T;
}

/** What makes one class: its name, its call, its options (each one's values, the default first) and its prompt. */
interface TaskSpec {
  name: 'Summarizer' | 'Writer' | 'Rewriter';
  verb: 'summarize' | 'write' | 'rewrite';
  options: Record<string, readonly string[]>;
  /** The system prompt's instruction for these option values. */
  instruction(o: Record<string, string>): string;
  /** What the input is called in the user's message. */
  input: string;
  /** The answer to an input of only white space, without the model: nothing to summarize or write, and nothing to
   * rewrite (the input itself), as the specification says. */
  blank(input: string): string;
}

const FORMAT: Record<string, string> = {
  markdown: 'Use Markdown where it helps.',
  'plain-text': 'Write plain text: no Markdown.',
  'as-is': "Keep the text's format (plain text or Markdown).",
};

const SUMMARY_LENGTH: Record<string, Record<string, string>> = {
  tldr: { short: 'one sentence', medium: 'three sentences', long: 'five sentences' },
  teaser: { short: 'one sentence', medium: 'three sentences', long: 'five sentences' },
  'key-points': { short: 'three bullet points', medium: 'five bullet points', long: 'seven bullet points' },
  headline: { short: 'about 12 words', medium: 'about 17 words', long: 'about 22 words' },
};

const SUMMARY_TYPE: Record<string, string> = {
  tldr: 'a short overview of the text, to the point (a TL;DR)',
  teaser: 'a teaser: the most interesting parts of the text, to draw the reader in',
  'key-points': 'the key points of the text, as a bulleted list',
  headline: 'a headline: the main point of the text in one line',
};

const SPECS: TaskSpec[] = [
  {
    name: 'Summarizer',
    verb: 'summarize',
    options: {
      type: ['key-points', 'tldr', 'teaser', 'headline'],
      format: ['markdown', 'plain-text'],
      length: ['short', 'medium', 'long'],
      preference: ['auto', 'speed', 'capability'], // one model here: reflected, not acted on
    },
    instruction: (o) =>
      `You summarize texts. Write ${SUMMARY_TYPE[o.type!]}, in ${SUMMARY_LENGTH[o.type!]![o.length!]}. ` +
      `${FORMAT[o.format!]} Answer with the summary only.`,
    input: 'Text to summarize',
    blank: () => '',
  },
  {
    name: 'Writer',
    verb: 'write',
    options: {
      tone: ['neutral', 'formal', 'casual'],
      format: ['markdown', 'plain-text'],
      length: ['short', 'medium', 'long'],
    },
    instruction: (o) =>
      `You write texts for the writing task you are given, in a ${o.tone} tone, ` +
      `${{ short: 'short (a paragraph at most)', medium: 'of medium length (a few paragraphs)', long: 'long (several paragraphs)' }[o.length!]}. ` +
      `${FORMAT[o.format!]} Answer with the text only.`,
    input: 'Writing task',
    blank: () => '',
  },
  {
    name: 'Rewriter',
    verb: 'rewrite',
    options: {
      tone: ['as-is', 'more-formal', 'more-casual'],
      format: ['as-is', 'markdown', 'plain-text'],
      length: ['as-is', 'shorter', 'longer'],
    },
    instruction: (o) =>
      'You rewrite texts, keeping their meaning. ' +
      `${{ 'as-is': "Keep the text's tone", 'more-formal': 'Make it more formal', 'more-casual': 'Make it more casual' }[o.tone!]}; ` +
      `${{ 'as-is': 'keep its length', shorter: 'make it shorter', longer: 'make it longer' }[o.length!]}. ` +
      `${FORMAT[o.format!]} Answer with the rewritten text only.`,
    input: 'Text to rewrite',
    blank: (input) => input,
  },
];

/** The three classes over `host` (the configuration's LanguageModel's): { Summarizer, Writer, Rewriter }. */
export function writingAssistanceClasses(host: ModelHost): {
  Summarizer: WritingTaskClass<Summarizer>;
  Writer: WritingTaskClass<Writer>;
  Rewriter: WritingTaskClass<Rewriter>;
} {
  const [Summarizer, Writer, Rewriter] = SPECS.map((spec) => taskClass(spec, host));
  return {
    Summarizer: Summarizer as unknown as WritingTaskClass<Summarizer>,
    Writer: Writer as unknown as WritingTaskClass<Writer>,
    Rewriter: Rewriter as unknown as WritingTaskClass<Rewriter>,
  };
}

/** What the constructor asks for: only create() makes objects. */
const MAKE = Symbol('WritingTask');

function taskClass(spec: TaskSpec, host: ModelHost) {
  /** The options' values, checked as the IDL converts them (a value outside an enum is a TypeError), and whether
   * the languages are ones this code knows (a malformed tag is a RangeError). */
  function settle(options: WritingCreateOptions) {
    const values: Record<string, string> = {};
    for (const [key, allowed] of Object.entries(spec.options)) {
      const v = options[key];
      if (v !== undefined && !allowed.includes(String(v))) {
        throw new TypeError(`${spec.name}'s ${key} is one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
      }
      values[key] = v === undefined ? allowed[0]! : String(v);
    }
    const list = (v: unknown) => (v === undefined ? null : Intl.getCanonicalLocales(v as string[]));
    const inputs = list(options.expectedInputLanguages);
    const contexts = list(options.expectedContextLanguages);
    const output = options.outputLanguage === undefined ? null : Intl.getCanonicalLocales(options.outputLanguage)[0]!;
    const known = languagesTaken([...(inputs ?? []), ...(contexts ?? []), ...(output ? [output] : [])], host.config);
    return { values, inputs, contexts, output, known };
  }

  class Task {
    static availability(options: WritingCreateOptions = {}): Promise<Availability> {
      return Promise.resolve().then(async () =>
        settle(options).known ? (await host.state()).availability : 'unavailable',
      );
    }

    static async create(options: WritingCreateOptions = {}): Promise<Task> {
      const { signal } = options;
      signal?.throwIfAborted();
      const settled = settle(options);
      if (!settled.known)
        throw new DOMException('a language is not one this model is known to write', 'NotSupportedError');
      const e = await host.open(options, (await host.state()).availability);
      signal?.throwIfAborted();
      const info = await e.info();
      const task = new Task(MAKE, e, info.context?.maxCtx ?? info.nCtx, settled, String(options.sharedContext ?? ''));
      // The create() signal's abort destroys the object, with the signal's reason (as the specification has it).
      signal?.addEventListener('abort', () => task.#end(signal.reason), { once: true });
      return task;
    }

    readonly #engine: HearthEngine;
    readonly #window: number;
    readonly #values: Record<string, string>;
    readonly #inputs: readonly string[] | null;
    readonly #contexts: readonly string[] | null;
    readonly #output: string | null;
    readonly #shared: string;
    readonly #ended = new AbortController();

    private constructor(
      token: symbol,
      e: HearthEngine,
      window: number,
      settled: ReturnType<typeof settle>,
      shared: string,
    ) {
      if (token !== MAKE) throw new TypeError(`Illegal constructor: use ${spec.name}.create()`);
      this.#engine = e;
      this.#window = window;
      this.#values = settled.values;
      this.#inputs = settled.inputs && Object.freeze(settled.inputs);
      this.#contexts = settled.contexts && Object.freeze(settled.contexts);
      this.#output = settled.output;
      this.#shared = shared;
    }

    // The task's own options (type or tone, format, length) as read-only attributes, as the IDL has them.
    static {
      for (const key of Object.keys(spec.options)) {
        Object.defineProperty(Task.prototype, key, {
          get(this: Task) {
            return this.#values[key];
          },
          enumerable: true,
          configurable: true,
        });
      }
    }

    get sharedContext(): string {
      return this.#shared;
    }

    get expectedInputLanguages(): readonly string[] | null {
      return this.#inputs;
    }

    get expectedContextLanguages(): readonly string[] | null {
      return this.#contexts;
    }

    get outputLanguage(): string | null {
      return this.#output;
    }

    /** The tokens an input may take: the engine's context window. */
    get inputQuota(): number {
      return this.#window;
    }

    /** The tokens the call's prompt takes as the model reads it: the system prompt, the input and its context. */
    measureInputUsage(input: string, options: WritingCallOptions = {}): Promise<number> {
      return this.#call(options.signal, async (signal) => this.#count(this.#messages(String(input), options), signal));
    }

    [`${spec.verb}`](input: string, options: WritingCallOptions = {}): Promise<string> {
      return this.#call(options.signal, async (signal) => {
        const text = String(input);
        const messages = await this.#checked(text, options, signal);
        if (!messages) return spec.blank(text);
        const res = await this.#engine.chat.completions.create({ messages, stream: false, signal });
        return res.choices[0]?.message.content ?? '';
      });
    }

    [`${spec.verb}Streaming`](input: string, options: WritingCallOptions = {}): ReadableStream<string> {
      this.#ended.signal.throwIfAborted();
      options.signal?.throwIfAborted();
      return textStream(options.signal, (signal, send) =>
        this.#call(signal, async (s) => {
          const text = String(input);
          const messages = await this.#checked(text, options, s);
          if (!messages) {
            if (spec.blank(text)) await send(spec.blank(text), s);
            return;
          }
          const chunks = await this.#engine.chat.completions.create({ messages, stream: true, signal: s });
          await sendContent(chunks, send, s);
        }),
      );
    }

    /** Ends the object: a call in flight and every later one reject with an AbortError. */
    destroy(): void {
      this.#end(new DOMException(`the ${spec.name} was destroyed`, 'AbortError'));
    }

    #end(reason: unknown) {
      if (!this.#ended.signal.aborted) this.#ended.abort(reason);
    }

    /** Runs `fn` with a signal that also ends when the object does; the engine's errors as the DOM's. */
    #call<T>(signal: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
      const both = signal ? AbortSignal.any([signal, this.#ended.signal]) : this.#ended.signal;
      if (both.aborted) return Promise.reject(both.reason);
      return fn(both).then(
        (value) => {
          both.throwIfAborted(); // ended while the engine answered: the answer is not given
          return value;
        },
        (err) => {
          throw domError(err, both);
        },
      );
    }

    /** The call's messages, or null for an input of only white space; QuotaExceededError over the window. */
    async #checked(input: string, options: WritingCallOptions, signal: AbortSignal): Promise<ChatMessage[] | null> {
      if (!input.trim()) return null;
      const messages = this.#messages(input, options);
      const tokens = await this.#count(messages, signal);
      if (tokens > this.#window) throw quotaExceeded('the input does not fit the context window', tokens, this.#window);
      return messages;
    }

    #messages(input: string, options: WritingCallOptions): ChatMessage[] {
      const language = this.#output ? ` Write in ${languageName(this.#output)}.` : '';
      const shared = this.#shared.trim() ? `\n\nWhat the texts are about: ${this.#shared}` : '';
      const context = options.context === undefined ? '' : String(options.context).trim();
      return [
        { role: 'system', content: `${spec.instruction(this.#values)}${language}${shared}` },
        { role: 'user', content: `${context ? `Context: ${context}\n\n` : ''}${spec.input}:\n${input}` },
      ];
    }

    async #count(messages: ChatMessage[], signal: AbortSignal): Promise<number> {
      return (await this.#engine.countTokens({ messages, signal })).prompt_tokens;
    }
  }
  // What an IDL interface has: its name on the class and in String(object) ('[object Summarizer]').
  Object.defineProperty(Task, 'name', { value: spec.name });
  Object.defineProperty(Task.prototype, Symbol.toStringTag, { value: spec.name, configurable: true });
  return Task;
}

/** A language's English name, for the prompt ('fr' → 'French'). */
function languageName(tag: string): string {
  return new Intl.DisplayNames(['en'], { type: 'language' }).of(tag) ?? tag;
}
