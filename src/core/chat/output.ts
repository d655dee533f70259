// The generated text cut into what the API returns: reasoning, content and tool calls, in the format the model's
// template teaches it (formats.ts detects which). parse() reads the whole text so far; with `partial` it leaves out
// whatever the next tokens could still turn into something else (the start of a marker, a call whose name is not yet
// known), so that each partial result extends the previous one and a stream can send the difference (output-stream.ts).
import type { Tool } from '../../types.ts';
import { heldBack } from './stop.ts';

export interface ParsedCall {
  name: string;
  /** The arguments' JSON text (partial while the call streams). */
  arguments: string;
}

export interface ParsedOutput {
  content: string;
  reasoning: string;
  calls: ParsedCall[];
}

export type ToolSyntax = 'hermes' | 'llama3' | 'mistral' | 'mistral-args' | 'harmony' | 'json' | 'none';

export interface OutputFormat {
  tools: ToolSyntax;
  /** The reasoning block's tags (<think>, [THINK]…), or null when the template has none. */
  think: { open: string; close: string } | null;
  /** The prompt ends inside the reasoning block (the template opened it): the reply starts with reasoning. */
  startsInReasoning: boolean;
}

/** Trimmed text; while it may go on (partial), trailing whitespace is held back rather than dropped. */
function trim(text: string, partial: boolean): string {
  return partial ? text.trimStart().replace(/\s+$/, '') : text.trim();
}

/** `text` up to the first of `markers`: [before, marker, after]; without one, what is surely text (partial). */
function cut(text: string, markers: string[], partial: boolean): [string, string | null, string] {
  let at = -1;
  let found: string | null = null;
  for (const m of markers) {
    const i = text.indexOf(m);
    if (i >= 0 && (at < 0 || i < at)) [at, found] = [i, m];
  }
  if (found !== null) return [text.slice(0, at), found, text.slice(at + found.length)];
  return [partial ? text.slice(0, text.length - heldBack(text, markers)) : text, null, ''];
}

/** The end of the JSON value starting at `from` (after whitespace), or -1 when the text ends first. */
function jsonValueEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  let depth = 0;
  let inString = false;
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') {
        inString = false;
        if (depth === 0) return i + 1;
      }
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (--depth <= 0) return i + 1;
    } else if (depth === 0 && /[,\s]/.test(c) && i > from) return i;
  }
  return -1;
}

/**
 * A JSON tool call, {"name": …, "arguments": {…}} (or "parameters"), from its text. The arguments are the text the
 * model wrote for them, so that the pieces streamed earlier add up to them. null while the name is not known, or
 * when the text is not such a call.
 */
function jsonCall(text: string, partial: boolean): ParsedCall | null {
  const name = /"name"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(text);
  if (!name) return null;
  const key = /"(?:arguments|parameters)"\s*:\s*/.exec(text);
  if (!key) return partial ? { name: jsonUnescape(name[1]!), arguments: '' } : null;
  const start = key.index + key[0].length;
  const end = jsonValueEnd(text, start);
  if (end < 0 && !partial) return null;
  const args = trim(text.slice(start, end < 0 ? text.length : end), end < 0);
  return { name: jsonUnescape(name[1]!), arguments: args };
}

function jsonUnescape(s: string): string {
  try {
    return JSON.parse(`"${s}"`) as string;
  } catch {
    return s;
  }
}

/** Qwen3-Coder / Qwen3.5's XML call: <function=name><parameter=p>value</parameter>…</function>. */
function xmlCall(text: string, partial: boolean, tools: Tool[]): ParsedCall | null {
  const head = /^\s*<function=([^>\n]+)>/.exec(text);
  if (!head) return null;
  const name = head[1]!.trim();
  const props = (tools.find((t) => t.function.name === name)?.function.parameters?.properties ?? {}) as Record<
    string,
    { type?: unknown }
  >;
  const pairs: string[] = [];
  const param = /<parameter=([^>\n]+)>\n?([\s\S]*?)\n?<\/parameter>/g;
  let m: RegExpExecArray | null;
  while ((m = param.exec(text))) {
    const key = m[1]!.trim();
    pairs.push(`${JSON.stringify(key)}: ${xmlValue(m[2]!, props[key]?.type)}`);
  }
  const closed = text.includes('</function>') || !partial;
  return { name, arguments: pairs.length || closed ? `{${pairs.join(', ')}${closed ? '}' : ''}` : '' };
}

// A parameter's text as JSON: a string where the schema says so, else the JSON the model wrote (or a string).
function xmlValue(raw: string, type: unknown): string {
  if (type !== 'string') {
    try {
      return JSON.stringify(JSON.parse(raw));
    } catch {
      /* not JSON: a string */
    }
  }
  return JSON.stringify(raw);
}

/** Cuts reasoning off the front of the text: [reasoning, the rest]. */
function splitReasoning(text: string, f: OutputFormat, partial: boolean): [string, string] {
  if (!f.think) return ['', text];
  const { open, close } = f.think;
  let rest = text;
  if (!f.startsInReasoning) {
    const lead = rest.trimStart();
    if (!lead.startsWith(open)) {
      if (partial && lead && open.startsWith(lead)) return ['', '']; // may still become the open tag
      return ['', text];
    }
    rest = lead.slice(open.length);
  }
  const [reasoning, end, after] = cut(rest, [close], partial);
  if (end === null) return [trim(reasoning, partial), ''];
  return [reasoning.trim(), after.trimStart()];
}

/** Parses the generated text in format `f` (tools: the request's, for typing XML parameters). */
export function parseOutput(text: string, f: OutputFormat, tools: Tool[], partial: boolean): ParsedOutput {
  if (f.tools === 'harmony') return parseHarmony(text, partial);
  const [reasoning, rest] = splitReasoning(text, f, partial);
  const out: ParsedOutput = { content: '', reasoning, calls: [] };
  switch (f.tools) {
    case 'hermes':
      parseTagged(rest, out, partial, tools);
      break;
    case 'llama3':
      parseLlama3(rest, out, partial);
      break;
    case 'mistral':
      parseMistral(rest, out, partial);
      break;
    case 'mistral-args':
      parseMistralArgs(rest, out, partial);
      break;
    case 'json':
      parseJson(rest, out, partial);
      break;
    case 'none':
      out.content = rest;
      break;
  }
  return out;
}

// <tool_call>{json}</tool_call> or <tool_call><function=…>…</tool_call>, any number, text around them is content.
function parseTagged(text: string, out: ParsedOutput, partial: boolean, tools: Tool[]) {
  let rest = text;
  for (;;) {
    const [before, open, after] = cut(rest, ['<tool_call>'], partial);
    out.content += out.calls.length ? before.trim() && before : before;
    if (open === null) return;
    const [body, close, next] = cut(after, ['</tool_call>'], false);
    // A call the reply ended inside (max_tokens) keeps what was written of it.
    const open_ = close === null;
    const call = body.trimStart().startsWith('<') ? xmlCall(body, open_, tools) : jsonCall(body, open_);
    if (!call) {
      if (!open_ || !partial) out.content += open + body + (close ?? ''); // not a call after all: it is text
      if (close === null) return;
    } else {
      out.calls.push(call);
      if (close === null) return;
    }
    rest = next;
  }
}

// Llama 3.x: the reply is a JSON call {"name", "parameters"}, or <|python_tag|> and a call (JSON or name.call(k=v)).
function parseLlama3(text: string, out: ParsedOutput, partial: boolean) {
  const tag = '<|python_tag|>';
  const lead = text.trimStart();
  const tagged = lead.startsWith(tag);
  if (!tagged && !lead.startsWith('{')) {
    if (partial && lead && tag.startsWith(lead)) return;
    const [before, found, after] = cut(text, [tag], partial);
    out.content = before;
    if (found) parseLlama3(found + after, out, partial);
    return;
  }
  const body = tagged ? lead.slice(tag.length) : lead;
  let rest = body;
  while (rest.trim()) {
    const start = rest.search(/\S/);
    if (rest[start] !== '{') {
      const py = /^\s*([\w.]+)\.call\(([\s\S]*)\)\s*$/.exec(rest);
      if (py && !partial) out.calls.push({ name: py[1]!, arguments: JSON.stringify(pythonKwargs(py[2]!)) });
      else if (!partial || !tagged) out.content += rest;
      return;
    }
    const end = jsonValueEnd(rest, start);
    const call = jsonCall(end < 0 ? rest : rest.slice(0, end), partial && end < 0);
    if (!call) {
      if (!partial || end >= 0) out.content += rest; // a JSON answer, not a call
      return;
    }
    out.calls.push(call);
    if (end < 0) return;
    rest = rest.slice(end).replace(/^\s*;?/, '');
  }
}

function pythonKwargs(src: string): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  const kv = /(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^,]+)/g;
  let m: RegExpExecArray | null;
  while ((m = kv.exec(src))) {
    const v = m[2]!.trim();
    if (v.startsWith("'")) args[m[1]!] = v.slice(1, -1);
    else {
      try {
        args[m[1]!] = JSON.parse(v);
      } catch {
        args[m[1]!] = v;
      }
    }
  }
  return args;
}

// Mistral Nemo: [TOOL_CALLS][{"name", "arguments", "id"}, …].
function parseMistral(text: string, out: ParsedOutput, partial: boolean) {
  const [before, found, after] = cut(text, ['[TOOL_CALLS]'], partial);
  out.content = before;
  if (found === null) return;
  let i = after.indexOf('[') + 1;
  if (i === 0) return;
  while (i < after.length) {
    const start = after.slice(i).search(/\S/);
    if (start < 0 || after[i + start] !== '{') return;
    const end = jsonValueEnd(after, i + start);
    const call = jsonCall(after.slice(i + start, end < 0 ? after.length : end), partial && end < 0);
    if (call) out.calls.push(call);
    if (end < 0) return;
    i = end + 1;
  }
}

// Mistral Small 3.2, Devstral, Ministral 3: [TOOL_CALLS]name[ARGS]{…}, repeated.
function parseMistralArgs(text: string, out: ParsedOutput, partial: boolean) {
  const parts = text.split('[TOOL_CALLS]');
  const [content] = cut(parts[0]!, ['[TOOL_CALLS]'], partial && parts.length === 1);
  out.content = content;
  for (const part of parts.slice(1)) {
    const [name, args, rest] = cut(part, ['[ARGS]'], partial);
    if (args === null) return;
    const end = jsonValueEnd(rest, 0);
    out.calls.push({
      name: name.trim(),
      arguments: trim(rest.slice(0, end < 0 ? rest.length : end), partial && end < 0),
    });
  }
}

// A call as the bare JSON object {"name", "arguments"} (templates without a tool-call syntax, under a grammar).
function parseJson(text: string, out: ParsedOutput, partial: boolean) {
  const call = text.trimStart().startsWith('{') ? jsonCall(text, partial) : null;
  if (call) out.calls.push(call);
  else if (!partial) out.content = text;
}

// gpt-oss (harmony): <|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…, calls as
// <|channel|>commentary to=functions.name <|constrain|>json<|message|>{…}<|call|>.
function parseHarmony(text: string, partial: boolean): ParsedOutput {
  const out: ParsedOutput = { content: '', reasoning: '', calls: [] };
  const ends = ['<|end|>', '<|call|>', '<|return|>', '<|start|>'];
  let rest = text;
  while (rest) {
    const [head, msg, body0] = cut(rest, ['<|message|>'], true);
    if (msg === null) {
      if (!partial && head.trim()) out.content += head.replace(/<\|[a-z]+\|>/g, '');
      break;
    }
    const channel = /<\|channel\|>\s*(\w+)/.exec(head)?.[1] ?? 'final';
    const recipient = /to=functions\.([\w.-]+)/.exec(head)?.[1];
    const [body, end, next] = cut(body0, ends, partial);
    if (recipient) out.calls.push({ name: recipient, arguments: trim(body, end === null && partial) });
    else if (channel === 'analysis') out.reasoning += body;
    else out.content += body;
    if (end === null) break;
    rest = end === '<|start|>' ? next : next.replace(/^<\|start\|>/, '');
  }
  return out;
}
