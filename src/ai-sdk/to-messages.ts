// The AI SDK's prompt (LanguageModelV4Prompt) as the OpenAI-shaped messages chat.completions.create takes: tool calls
// become assistant tool_calls, tool results `tool` messages. A user's image or audio file becomes an image_url or
// input_audio part (the engine refuses them without a projector); any other file is refused here, before anything is
// queued, rather than silently dropped.
import type {
  LanguageModelV4FilePart,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
} from '@ai-sdk/provider';
import { InvalidRequestError } from '../errors.ts';
import type { ChatMessage, ContentPart, ToolCall } from '../types.ts';

type Content<R extends LanguageModelV4Message['role']> = Extract<LanguageModelV4Message, { role: R }>['content'];

export function toMessages(prompt: LanguageModelV4Prompt): ChatMessage[] {
  return prompt.flatMap((m): ChatMessage[] => {
    switch (m.role) {
      case 'system':
        return [{ role: 'system', content: m.content }];
      case 'user':
        return [{ role: 'user', content: userContent(m.content) }];
      case 'assistant':
        return [assistantMessage(m.content)];
      case 'tool':
        return toolMessages(m.content);
    }
  });
}

function noFiles(mediaType: string): never {
  throw new InvalidRequestError(
    `Hearth reads text, images and audio: a ${mediaType} file part cannot be sent. Send it as text.`,
    'unsupported_content',
    { mediaType },
  );
}

function userContent(parts: Content<'user'>): string | ContentPart[] {
  const out = parts.map((p): ContentPart => (p.type === 'text' ? { type: 'text', text: p.text } : filePart(p)));
  // One text part is a plain string, which every template renders; several stay parts (joined as llama.cpp joins them).
  return out.length === 1 && out[0]!.type === 'text' ? out[0]!.text : out;
}

/** An image or audio file as OpenAI's content part: bytes as a Blob, base64 as a data: URL or audio data, a URL as it
 * is. */
function filePart(p: LanguageModelV4FilePart): ContentPart {
  const kind = p.mediaType.split('/')[0];
  const d = p.data;
  if (kind === 'image') {
    if (d.type === 'url') return { type: 'image_url', image_url: { url: d.url.toString() } };
    if (d.type === 'data') {
      const url =
        typeof d.data === 'string'
          ? `data:${p.mediaType};base64,${d.data}`
          : new Blob([d.data as Uint8Array<ArrayBuffer>], { type: p.mediaType });
      return { type: 'image_url', image_url: { url } };
    }
  }
  if (kind === 'audio' && d.type === 'data') {
    const format =
      p.mediaType.includes('mp3') || p.mediaType.includes('mpeg')
        ? 'mp3'
        : p.mediaType.includes('flac')
          ? 'flac'
          : 'wav';
    const data =
      typeof d.data === 'string' ? d.data : new Blob([d.data as Uint8Array<ArrayBuffer>], { type: p.mediaType });
    return { type: 'input_audio', input_audio: { data, format } };
  }
  return noFiles(p.mediaType);
}

function assistantMessage(parts: Content<'assistant'>): ChatMessage {
  let text = '';
  let reasoning = '';
  const calls: ToolCall[] = [];
  for (const p of parts) {
    if (p.type === 'text') text += p.text;
    else if (p.type === 'reasoning') reasoning += p.text;
    else if (p.type === 'tool-call' && !p.providerExecuted) {
      // The SDK hands back the parsed input; a string is the model's own text when it did not parse, kept as it was.
      const args = typeof p.input === 'string' ? p.input : JSON.stringify(p.input ?? {});
      calls.push({ id: p.toolCallId, type: 'function', function: { name: p.toolName, arguments: args } });
    } else if (p.type === 'file' || p.type === 'reasoning-file') noFiles(p.mediaType);
    // Custom parts and provider-executed tool results mean nothing to a local model: left out.
  }
  const message: ChatMessage = { role: 'assistant', content: calls.length && !text ? null : text };
  if (calls.length) message.tool_calls = calls;
  // Templates that render earlier reasoning (Kimi, MiniMax, …) get it back; the others drop it.
  if (reasoning) message.reasoning_content = reasoning;
  return message;
}

function toolMessages(parts: Content<'tool'>): ChatMessage[] {
  // Approval responses concern provider-executed tools, which Hearth has none of.
  return parts.flatMap((p): ChatMessage[] =>
    p.type === 'tool-result' ? [{ role: 'tool', tool_call_id: p.toolCallId, content: outputText(p.output) }] : [],
  );
}

function outputText(output: LanguageModelV4ToolResultOutput): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value;
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value);
    case 'execution-denied':
      return output.reason ?? 'The user denied this tool call.';
    case 'content':
      return output.value
        .map((p) => (p.type === 'text' ? p.text : p.type === 'file' ? noFiles(p.mediaType) : ''))
        .join('\n');
  }
}
