// How a reply is generated and read, from the model's chat template and vocabulary: the grammar a request forces
// (response_format, grammar, a required tool call), the parser that cuts the text into reasoning, content and tool
// calls, and the special tokens that must come out as text for that parser. The wasm engine and the 'webgpu' backend
// (wllama) both use it, so a reply is read the same way whichever backend wrote it.
import type { ReplyConstraint, ResolvedRequest } from '../../contract.ts';
import { jsonObjectGrammar, schemaGrammar } from './json-schema.ts';
import { replyPrefix } from './messages.ts';
import { detectFormat, forPrompt, type SpecialToken, toolCallGrammar, type TemplateFormat } from './formats.ts';
import { parseOutput, type OutputFormat, type ParsedOutput } from './output.ts';

/** How a request's reply is generated and read. */
export interface ReplyPlan {
  /** GBNF the reply must follow (response_format, grammar, or a forced tool call); null for none. */
  grammar: string | null;
  /** The request parameter the grammar comes from, for an error that names it. */
  grammarParam: 'grammar' | 'response_format' | 'tools' | null;
  /** Cuts the text into reasoning, content and tool calls; null when it is all content. */
  parse: ((text: string, partial: boolean) => ParsedOutput) | null;
  /** Special tokens rendered as text in the reply (the format's markers), by id and by text. */
  preserved: Map<number, string>;
  /** The text the reply continues (an assistant message with prefix: true): a grammar takes it first. */
  prefix: string | null;
}

/** Markers of the output formats that some vocabularies hold as special tokens. */
const MARKERS = [
  '<tool_call>',
  '</tool_call>',
  '<think>',
  '</think>',
  '[THINK]',
  '[/THINK]',
  '<|python_tag|>',
  '[TOOL_CALLS]',
  '[ARGS]',
  '<|channel|>',
  '<|message|>',
  '<|start|>',
  '<|end|>',
  '<|constrain|>',
  '<|call|>',
  '<|return|>',
];

export class ReplyPlanner {
  readonly format: TemplateFormat;
  /** The format's markers that are special tokens, by text. */
  private readonly markers = new Map<string, number>();

  /** `special(text)`: the id of the special (control) token whose text is `text`, or null. */
  constructor(template: string, special: SpecialToken) {
    this.format = detectFormat(template);
    for (const marker of MARKERS) {
      const id = special(marker);
      if (id !== null) this.markers.set(marker, id);
    }
  }

  /** The grammar, parser and preserved tokens for this request's reply, given its rendered prompt. */
  plan(
    req: Pick<ResolvedRequest, 'messages' | 'toolChoice' | 'tools' | 'constraint' | 'parallelToolCalls'>,
    prompt: string,
  ): ReplyPlan {
    const base = forPrompt(this.format, prompt);
    const forced = req.toolChoice === 'required' || typeof req.toolChoice === 'object';
    // Calls are read only where the model has a syntax for them, or a grammar forces the bare JSON form.
    const calls = req.toolChoice !== 'none' && !req.constraint && (base.tools !== 'json' || forced);
    const format: OutputFormat = { ...base, tools: calls ? base.tools : 'none' };
    let grammar = constraintGrammar(req.constraint);
    let grammarParam: ReplyPlan['grammarParam'] = req.constraint
      ? 'grammar' in req.constraint
        ? 'grammar'
        : 'response_format'
      : null;
    if (forced) {
      grammarParam = 'tools';
      grammar = toolCallGrammar(
        base.tools,
        req.tools!,
        req.toolChoice,
        req.parallelToolCalls,
        (text) => this.markers.get(text) ?? null,
        this.format.xmlCalls,
      );
    }
    const tools = req.tools ?? [];
    const parse =
      format.tools !== 'none' || format.think
        ? (text: string, partial: boolean) => parseOutput(text, format, tools, partial)
        : null;
    // Without a parser nothing reads the markers: special tokens stay out of the content, as before.
    return {
      grammar,
      grammarParam,
      parse,
      preserved: new Map(parse ? [...this.markers].map(([text, id]) => [id, text]) : []),
      prefix: replyPrefix(req.messages),
    };
  }
}

/** The GBNF of a request's constraint: its own grammar, or JSON (InvalidRequestError 'invalid_schema', naming the
 * schema, for a keyword that cannot be enforced). */
function constraintGrammar(c: ReplyConstraint | null): string | null {
  if (!c) return null;
  if ('grammar' in c) return c.grammar;
  return c.json === 'object' ? jsonObjectGrammar() : schemaGrammar(c.schema, 'response_format.json_schema.schema');
}
