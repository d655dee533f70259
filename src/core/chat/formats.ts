// Which output format a model writes, read from its chat template (the syntax it renders earlier tool calls and
// reasoning in is the syntax the model was trained to write), and the grammars that force a tool call in it
// ('required' and named tool_choice).
import { GrammarBuilder, gbnfLiteral } from './json-schema.ts';
import type { ResolvedToolChoice } from '../../contract.ts';
import type { Tool } from '../../types.ts';
import type { OutputFormat, ToolSyntax } from './output.ts';

const THINK_TAGS = [
  { open: '<think>', close: '</think>' },
  { open: '[THINK]', close: '[/THINK]' },
  { open: '<seed:think>', close: '</seed:think>' },
];

/** What the template tells of the output: tool-call syntax, reasoning tags, and whether calls are XML (Qwen3-Coder). */
export type TemplateFormat = Omit<OutputFormat, 'startsInReasoning'> & { xmlCalls: boolean };

/** The template's tool-call syntax and reasoning tags (the prompt decides startsInReasoning: see forPrompt). */
export function detectFormat(template: string): TemplateFormat {
  let tools: ToolSyntax = 'json';
  if (template.includes('<|channel|>')) tools = 'harmony';
  else if (template.includes('[TOOL_CALLS]')) tools = template.includes('[ARGS]') ? 'mistral-args' : 'mistral';
  else if (template.includes('<tool_call>')) tools = 'hermes';
  else if (
    template.includes('<|python_tag|>') ||
    (template.includes('<|start_header_id|>') && template.includes('ipython'))
  ) {
    tools = 'llama3';
  }
  const think =
    tools === 'harmony'
      ? null
      : (THINK_TAGS.find((t) => template.includes(t.open) && template.includes(t.close)) ?? null);
  return { tools, think, xmlCalls: tools === 'hermes' && template.includes('<function=') };
}

/** The format for one request: whether its rendered prompt already opened the reasoning block. */
export function forPrompt(format: TemplateFormat, prompt: string): OutputFormat {
  const startsInReasoning = !!format.think && prompt.trimEnd().endsWith(format.think.open);
  return { tools: format.tools, think: format.think, startsInReasoning };
}

/** Markers the tokenizer holds as single special tokens: a grammar must name them as tokens (<[id]>), since their
 * text is not what the grammar sampler sees. */
export type SpecialToken = (text: string) => number | null;

/**
 * The grammar that makes the reply one or more calls (one when !parallel) of the chosen tools, in the model's syntax.
 * Each call's arguments follow the tool's parameter schema.
 */
export function toolCallGrammar(
  syntax: ToolSyntax,
  tools: Tool[],
  choice: ResolvedToolChoice,
  parallel: boolean,
  special: SpecialToken,
  xml: boolean,
): string {
  const g = new GrammarBuilder('tools');
  const lit = (text: string) => {
    const id = special(text);
    return id === null ? gbnfLiteral(text) : `<[${id}]>`;
  };
  const chosen = typeof choice === 'object' ? tools.filter((t) => t.function.name === choice.name) : tools;
  const space = g.primitive('space');
  const args = (t: Tool, i: number) => g.schema(t.function.parameters ?? { type: 'object' }, `tool-${i}-args`);
  const jsonCall = (t: Tool, i: number, key = 'arguments') =>
    g.rule(
      `call-${i}`,
      `"{" space "\\"name\\"" space ":" space ${gbnfLiteral(JSON.stringify(t.function.name))} space "," space ` +
        `${gbnfLiteral(JSON.stringify(key))} space ":" space ${args(t, i)} "}" ${space}`,
    );
  let one: string[];
  let sep = space;
  let wrap = (body: string) => body;
  switch (syntax) {
    case 'hermes':
      one = chosen.map((t, i) =>
        xml ? xmlCall(g, t, i) : `${lit('<tool_call>')} "\\n" ${jsonCall(t, i)} ${lit('</tool_call>')} ${space}`,
      );
      break;
    case 'llama3':
      one = chosen.map((t, i) => jsonCall(t, i, 'parameters'));
      sep = `";" ${space}`;
      break;
    case 'mistral':
      one = chosen.map((t, i) => jsonCall(t, i));
      sep = `"," ${space}`;
      wrap = (body) => `${lit('[TOOL_CALLS]')} "[" ${body} "]"`;
      break;
    case 'mistral-args':
      one = chosen.map(
        (t, i) => `${lit('[TOOL_CALLS]')} ${gbnfLiteral(t.function.name)} ${lit('[ARGS]')} ${args(t, i)}`,
      );
      sep = '""';
      break;
    case 'harmony':
      one = chosen.map(
        (t, i) =>
          `${lit('<|channel|>')} "commentary to=functions.${t.function.name} " ${lit('<|constrain|>')} ` +
          `"json" ${lit('<|message|>')} ${args(t, i)}`,
      );
      parallel = false; // each harmony call ends the turn (<|call|>)
      break;
    default:
      one = chosen.map((t, i) => jsonCall(t, i));
      parallel = false;
  }
  const call = g.rule('call', one.map((c) => `( ${c} )`).join(' | '));
  return g.text(wrap(parallel ? `${call} (${sep} ${call})*` : call));
}

// Qwen3-Coder / Qwen3.5: <tool_call>\n<function=name>\n<parameter=p>\nvalue\n</parameter>\n…</function>\n</tool_call>
function xmlCall(g: GrammarBuilder, t: Tool, i: number): string {
  const schema = (t.function.parameters ?? {}) as {
    properties?: Record<string, Record<string, unknown>>;
    required?: string[];
  };
  const required = new Set(schema.required ?? []);
  const params = Object.entries(schema.properties ?? {}).map(([key, s], k) => {
    // A string is written as plain text (it ends at the first '<'); anything else as JSON.
    const value =
      s.type === 'string' && !s.enum && !s.const ? g.rule('xml-text', '[^<]*') : g.schema(s, `tool-${i}-${k}`, schema);
    const p = `${gbnfLiteral(`<parameter=${key}>\n`)} ${value} ${gbnfLiteral('\n</parameter>\n')}`;
    return required.has(key) ? p : `( ${p} )?`;
  });
  return `${gbnfLiteral(`<tool_call>\n<function=${t.function.name}>\n`)} ${params.join(' ')} ${gbnfLiteral('</function>\n</tool_call>')} ${g.primitive('space')}`;
}
