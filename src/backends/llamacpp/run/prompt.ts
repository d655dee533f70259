// Prompt preparation: a request rendered with the model's chat template, tokenized the way the cache matches it, and
// its rendered system prefix (the system messages and tools), which the cache keeps on its own and a context shift
// keeps by default.
import type { RequestMedia, ResolvedRequest } from '../../../contract.ts';
import type { ChatMessage, Tool } from '../../../types.ts';
import { hashText } from '../../../core/hash.ts';
import { systemKey } from '../cache/identity.ts';
import { commonPrefix } from '../cache/prefix.ts';
import type { CacheRequest } from '../cache/prompt-cache.ts';
import { ReplyPlanner, type ReplyPlan } from '../../../core/chat/reply-plan.ts';
import { ChatTemplate } from '../../../core/chat/template.ts';
import type { Llama } from '../binding/llama.ts';
import type { LlamaModel } from '../binding/model.ts';
import type { LlamaProjector, MediaPrompt } from '../binding/mtmd.ts';
import { markerText } from '../../../core/chat/media.ts';

export interface PreparedPrompt extends CacheRequest {
  /** The rendered prompt. */
  text: string;
  /** Tokens at the start a context shift never drops (n_keep); 0 unless the request may shift. */
  keep: number;
  output: ReplyPlan;
  /** The media chunks whose placeholders `tokens` holds (freed when the request ends); null without media. */
  media: MediaPrompt | null;
  /** Token counts at the ends of the last messages before the prompt's end, ascending, where the memory cannot roll
   * back (PromptOptions.messageEnds): states kept there let an edit of a later message resume from them. */
  messageEnds: number[];
}

export interface PromptOptions {
  /** Whether the system prefix is cached (its length is needed then, or as a shift's default n_keep). */
  systemPrompt: boolean;
  /** Shorter system prefixes are not cached. */
  minTokens: number;
  /** The saved-state layout (model, build, KV types): part of a system prefix's key. */
  layout: string;
  /** Whether to find where the last messages end in the prompt (memory that cannot roll back keeps states there). */
  messageEnds: boolean;
}

/** How many of the last message ends are found, each a render and a tokenization of the conversation up to it. */
const MESSAGE_ENDS = 6;

export class Prompts {
  readonly template: ChatTemplate;
  private readonly bosText: string;
  private readonly templateHash: string;
  private readonly planner: ReplyPlanner;

  constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly options: PromptOptions,
    private readonly projector: LlamaProjector | null = null,
  ) {
    const text = (t: number) => (t >= 0 ? new TextDecoder().decode(model.tokenBytes(t, true)) : '');
    this.bosText = text(model.bos);
    this.template = new ChatTemplate(model.chatTemplate, { bos: this.bosText, eos: text(model.eos) });
    if (this.template.warning) console.warn(`[hearth] ${this.template.warning}`);
    this.templateHash = hashText(this.template.source);
    this.planner = new ReplyPlanner(this.template.source, (t) => this.specialToken(t));
  }

  /** The id of the special token whose text is `text`, or null when it is not one. */
  private specialToken(text: string): number | null {
    const parsed = this.llama.guard(() => this.model.tokenize(text, false, true));
    if (parsed.length !== 1) return null;
    const plain = this.llama.guard(() => this.model.tokenize(text, false, false));
    return plain.length === 1 && plain[0] === parsed[0] ? null : parsed[0]!;
  }

  /** The request's prompt, its tokens, what the cache matches them by, and the tokens a context shift keeps. */
  prepare(req: ResolvedRequest): PreparedPrompt {
    const { text, addSpecial, tokens, media } = this.render(req.messages, req.tools, req.templateKwargs, req.media);
    const shift = req.contextOverflow === 'shift';
    const systemN =
      this.options.systemPrompt || (shift && req.nKeep === null) ? this.systemLength(req, text, tokens, addSpecial) : 0;
    const keep = shift ? (req.nKeep ?? (systemN || (this.model.addBos ? 1 : 0))) : 0;
    return {
      messages: req.messages,
      tools: req.tools,
      conversationId: req.conversationId,
      onProgress: req.onProgress,
      text,
      tokens,
      system: this.systemPrefix(systemN, tokens),
      keep,
      output: this.planner.plan(req, text),
      media,
      messageEnds: this.options.messageEnds && !media ? this.messageEnds(req, tokens, addSpecial) : [],
    };
  }

  /** Where each of the last MESSAGE_ENDS messages before the last ends in `tokens` (what the conversation up to it
   * renders to shares with the whole prompt), ascending; a conversation the template cannot render that far is
   * skipped. */
  private messageEnds(req: ResolvedRequest, tokens: Int32Array, addSpecial: boolean): number[] {
    const ends: number[] = [];
    const n = req.messages.length;
    for (let k = Math.max(1, n - MESSAGE_ENDS); k < n; k++) {
      let text: string;
      try {
        text = this.template.render(req.messages.slice(0, k), {
          tools: req.tools,
          kwargs: req.templateKwargs,
          addGenerationPrompt: false,
        });
      } catch {
        continue; // some templates refuse a conversation that ends where this one would
      }
      const end = commonPrefix(
        this.llama.guard(() => this.model.tokenize(text, addSpecial, true)),
        tokens,
      );
      if (end > (ends.at(-1) ?? 0) && end < tokens.length) ends.push(end);
    }
    return ends;
  }

  /**
   * The tokens every conversation that starts with `messages` (a system prompt, say) begins with: where two prompts
   * that go on with different user messages part. What a shipped prompt state holds.
   */
  sharedPrefix(messages: ChatMessage[], tools: Tool[] | undefined, kwargs: Record<string, unknown>): Int32Array {
    const [a, b] = ['A', 'B'].map(
      (q) => this.render([...messages, { role: 'user', content: q }], tools, kwargs).tokens,
    );
    return a!.slice(0, commonPrefix(a!, b!));
  }

  /**
   * The prompt text for `messages` and its tokens (control tokens parsed). With media, each image or audio part is the
   * projector's marker in the text, and the projector puts the media's chunks there (placeholder tokens).
   */
  private render(
    messages: ChatMessage[],
    tools: Tool[] | undefined,
    kwargs: Record<string, unknown>,
    media?: RequestMedia[],
  ) {
    const projector = media?.length ? this.projector : null;
    const shown = projector
      ? messages.map((m) => ({ ...m, content: markerText(m.content, projector.marker) }))
      : messages;
    const text = this.template.render(shown, { tools, kwargs });
    // Templates that write the BOS text themselves must not get a second BOS from the tokenizer.
    const addSpecial = !(this.bosText && text.startsWith(this.bosText));
    if (!projector) {
      return {
        text,
        addSpecial,
        tokens: this.llama.guard(() => this.model.tokenize(text, addSpecial, true)),
        media: null,
      };
    }
    const prompt = this.llama.guard(() => projector.prompt(text, addSpecial, media!));
    return { text, addSpecial, tokens: prompt.tokens, media: prompt };
  }

  /** The first `n` prompt tokens, when the system prompt is cached and they are long enough to cache on their own. */
  private systemPrefix(n: number, tokens: Int32Array) {
    if (!this.options.systemPrompt || n < this.options.minTokens || n >= tokens.length) return null;
    const own = tokens.slice(0, n);
    return { key: systemKey(this.options.layout, this.templateHash, own), tokens: own };
  }

  /** How many prompt tokens the rendered system messages (and tools) take; 0 when there are none. */
  private systemLength(req: ResolvedRequest, prompt: string, tokens: Int32Array, addSpecial: boolean): number {
    let lead = 0;
    while (
      lead < req.messages.length &&
      (req.messages[lead]!.role === 'system' || req.messages[lead]!.role === 'developer')
    ) {
      lead++;
    }
    if (lead === 0 || lead === req.messages.length) return 0;
    let text: string;
    try {
      text = this.template.render(req.messages.slice(0, lead), {
        tools: req.tools,
        kwargs: req.templateKwargs,
        addGenerationPrompt: false,
      });
    } catch {
      return 0; // some templates refuse a conversation without a user message
    }
    if (!text || !prompt.startsWith(text)) return 0;
    // The prefix's own tokenization can differ at its end from the whole prompt's: keep the part they share.
    return commonPrefix(
      this.llama.guard(() => this.model.tokenize(text, addSpecial, true)),
      tokens,
    );
  }
}
