// Renders a conversation into the prompt text the model was trained on, with the GGUF's own Jinja chat template
// (@huggingface/jinja). Models without a template get ChatML, the most common format, and a warning.
import { Template } from '@huggingface/jinja';
import { InvalidRequestError } from '../../errors.ts';
import type { ChatMessage, Tool } from '../../types.ts';

export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export interface TemplateTokens {
  bos: string;
  eos: string;
}

export class ChatTemplate {
  readonly source: string;
  /** Set when the model's own template was missing or unusable and ChatML is used instead. */
  readonly warning: string | null;
  private readonly template: Template;

  constructor(source: string | null, private readonly tokens: TemplateTokens) {
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
  }

  /** The prompt for `messages`, ending with the assistant's turn header when addGenerationPrompt. */
  render(messages: ChatMessage[], opts: { tools?: Tool[]; addGenerationPrompt?: boolean } = {}): string {
    const context: Record<string, unknown> = {
      messages: messages.map(normaliseMessage),
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      bos_token: this.tokens.bos,
      eos_token: this.tokens.eos,
    };
    if (opts.tools?.length) context.tools = opts.tools;
    try {
      return this.template.render(context);
    } catch (err) {
      // Includes the template's own raise_exception("…"), e.g. "Conversation roles must alternate".
      throw new InvalidRequestError(`the chat template failed to render these messages: ${(err as Error).message}`, 'template_error');
    }
  }
}

// Templates expect content as a string; OpenAI also allows an array of text parts.
function normaliseMessage(m: ChatMessage): Record<string, unknown> {
  const content = Array.isArray(m.content) ? m.content.map((p) => p.text).join('') : (m.content ?? '');
  const out: Record<string, unknown> = { role: m.role, content };
  if (m.name !== undefined) out.name = m.name;
  if (m.tool_calls !== undefined) {
    out.tool_calls = m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: parseArgs(c.function.arguments) } }));
  }
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  return out;
}

// Templates index tool-call arguments as objects (llama.cpp does the same conversion).
function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}
