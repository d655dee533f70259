// What a chat template can render, found by rendering probe conversations and looking for their markers in the
// output (llama.cpp's chat-template loader asks the same questions), and the messages adapted to it.
import type { ChatMessage } from '../../types.ts';
import { contentText } from './messages.ts';

export interface TemplateCaps {
  /** A system message's text reaches the prompt (Gemma 2 and others refuse or drop it). */
  systemRole: boolean;
  /** Tool definitions reach the prompt. */
  tools: boolean;
  /** An assistant message's tool calls reach the prompt. */
  toolCalls: boolean;
  /** Tool-call arguments are read as an object (most templates); else they are given as the JSON string. */
  objectArguments: boolean;
  /** Content given as a string is rendered. */
  stringContent: boolean;
  /** Content given as typed parts ({type: 'text', text}) is rendered part by part, not printed as a list. */
  typedContent: boolean;
}

type Render = (context: Record<string, unknown>) => string;

const MARK = 'hearth_probe_';

export function probeCaps(render: Render): TemplateCaps {
  const attempt = (messages: unknown[], extra: Record<string, unknown> = {}) => {
    try {
      return render({ messages, add_generation_prompt: true, bos_token: '', eos_token: '', ...extra });
    } catch {
      return null;
    }
  };
  const user = (content: unknown) => ({ role: 'user', content });
  const system = attempt([{ role: 'system', content: `${MARK}system` }, user('Hi')]);
  const text = attempt([user(`${MARK}string`)]);
  const typed = attempt([user([{ type: 'text', text: `${MARK}typed` }])]);
  const tools = attempt([user('Hi')], { tools: PROBE_TOOLS });
  // A template that concatenates the arguments as a string prints an object as "[object Map]" (or fails on it).
  const calls = (args: unknown) => {
    const rendered = attempt(toolConversation(args), { tools: PROBE_TOOLS });
    return rendered?.includes(`${MARK}call`) && !rendered.includes('[object ') ? rendered : null;
  };
  const objectArguments = !!calls({ arg: `${MARK}argument` })?.includes(`${MARK}argument`);
  return {
    systemRole: !!system?.includes(`${MARK}system`),
    tools: !!tools?.includes(`${MARK}tool`),
    toolCalls: objectArguments || !!calls(JSON.stringify({ arg: `${MARK}argument` })),
    objectArguments,
    stringContent: !!text?.includes(`${MARK}string`),
    // Printed as a list, the part shows its keys: "{'type': 'text', …".
    typedContent: !!typed?.includes(`${MARK}typed`) && !/['"]type['"]\s*:/.test(typed),
  };
}

const PROBE_TOOLS = [
  {
    type: 'function',
    function: {
      name: `${MARK}tool`,
      description: 'A tool',
      parameters: {
        type: 'object',
        properties: { arg: { type: 'string', description: 'An argument' } },
        required: ['arg'],
      },
    },
  },
];

function toolConversation(args: unknown) {
  return [
    { role: 'user', content: 'Use the tool' },
    {
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call00001', type: 'function', function: { name: `${MARK}call`, arguments: args } }],
    },
    { role: 'tool', content: 'The result', tool_call_id: 'call00001' },
    { role: 'assistant', content: 'Done' },
    { role: 'user', content: 'Thanks' },
  ];
}

/** The messages as `caps` can render them: parts joined or kept, a system message the template drops merged into
 * the next one (llama.cpp's rule), tool-call arguments as an object or the JSON string, reasoning passed through. */
export function adaptMessages(messages: ChatMessage[], caps: TemplateCaps): Record<string, unknown>[] {
  const out = messages.map((m) => adaptMessage(m, caps));
  if (!caps.systemRole && out[0]?.role === 'system') {
    const [system, next] = out;
    // Nothing to merge into: the system message is dropped, as llama.cpp does.
    // Adapted content is a string or text parts, as in a ChatMessage.
    const text = (m: Record<string, unknown>) => contentText(m.content as ChatMessage['content']);
    if (next) next.content = `${text(system!)}\n${text(next)}`;
    out.shift();
  }
  return out;
}

function adaptMessage(m: ChatMessage, caps: TemplateCaps): Record<string, unknown> {
  let content: unknown = m.content ?? '';
  if (Array.isArray(m.content)) {
    content = caps.typedContent
      ? m.content.map((p) => ({ type: 'text', text: p.type === 'text' ? p.text : '' }))
      : contentText(m.content);
  } else if (!caps.stringContent && caps.typedContent) {
    content = [{ type: 'text', text: content }];
  }
  const out: Record<string, unknown> = { role: m.role, content };
  if (m.name !== undefined) out.name = m.name;
  if (m.reasoning_content != null) out.reasoning_content = m.reasoning_content;
  if (m.tool_calls !== undefined) {
    out.tool_calls = m.tool_calls.map((c) => ({
      ...c,
      function: {
        ...c.function,
        arguments: caps.objectArguments ? parseArgs(c.function.arguments) : c.function.arguments,
      },
    }));
  }
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  return out;
}

function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}
