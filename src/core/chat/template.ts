// Renders a conversation into the prompt text the model was trained on, with the GGUF's own Jinja chat template:
// @huggingface/jinja, patched (patches/) to render as Python's jinja2 does, and the messages adapted to what the
// template can render (caps.ts). Models without a template get ChatML, the most common format, and a warning.
import { Template } from '@huggingface/jinja';
import { InvalidRequestError } from '../../errors.ts';
import type { ChatMessage, Tool } from '../../types.ts';
import { adaptMessages, probeCaps, type TemplateCaps } from './caps.ts';
import { replyPrefix } from './messages.ts';
import { strftime } from './strftime.ts';

const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export interface TemplateTokens {
  bos: string;
  eos: string;
}

export interface RenderOptions {
  tools?: Tool[];
  /** End with the assistant's turn header (default true). */
  addGenerationPrompt?: boolean;
  /** More template variables (chat_template_kwargs: enable_thinking, reasoning_effort, …). */
  kwargs?: Record<string, unknown>;
}

export class ChatTemplate {
  readonly source: string;
  /** Set when the model's own template was missing or unusable and ChatML is used instead. */
  readonly warning: string | null;
  readonly caps: TemplateCaps;
  private readonly template: Template;

  /** `now` is the clock strftime_now reads (templates that write today's date). */
  constructor(
    source: string | null,
    private readonly tokens: TemplateTokens,
    private readonly now: () => Date = () => new Date(),
  ) {
    let warning: string | null = null;
    let template: Template | null = null;
    if (source) {
      try {
        template = new Template(source);
      } catch (err) {
        warning = `the model's chat template could not be parsed (${(err as Error).message}); using ChatML instead`;
      }
    } else {
      warning = 'the model has no chat template (tokenizer.chat_template); using ChatML';
    }
    this.template = template ?? new Template(CHATML_TEMPLATE);
    this.source = template ? source! : CHATML_TEMPLATE;
    this.warning = warning;
    this.caps = probeCaps((context) => this.template.render({ ...context, strftime_now: this.strftimeNow }));
  }

  /** What the template is given for `messages`: the messages adapted to its caps, tools, special tokens. */
  context(messages: ChatMessage[], opts: RenderOptions = {}): Record<string, unknown> {
    const context: Record<string, unknown> = {
      ...opts.kwargs,
      messages: adaptMessages(messages, this.caps),
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      bos_token: this.tokens.bos,
      eos_token: this.tokens.eos,
    };
    if (opts.tools?.length) context.tools = opts.tools;
    return context;
  }

  /** The prompt for `messages`, ending with the assistant's turn header when addGenerationPrompt; where the last
   * message is a prefix for the reply, the turn header and that text (the model goes on from it). */
  render(messages: ChatMessage[], opts: RenderOptions = {}): string {
    const prefix = replyPrefix(messages);
    if (prefix !== null) return this.render(messages.slice(0, -1), { ...opts, addGenerationPrompt: true }) + prefix;
    try {
      return this.template.render({ ...this.context(messages, opts), strftime_now: this.strftimeNow });
    } catch (err) {
      // Includes the template's own raise_exception("…"), e.g. "Conversation roles must alternate".
      throw new InvalidRequestError(
        `the chat template failed to render these messages: ${(err as Error).message}`,
        'template_error',
      );
    }
  }

  private readonly strftimeNow = (format: string) => strftime(this.now(), format);
}
