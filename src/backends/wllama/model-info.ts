// The model as the 'wllama' backend (wllama.ts) describes it, from its GGUF header read by Hearth's reader: its
// ModelInfo (with what wllama reports once loaded), its chat template and reply planner from the vocabulary (wllama has
// no tokenizer API), and its largest tensor (whether it fits the adapter's storage buffers).
import type { Wllama } from '@wllama/wllama/esm/index.js';
import { ReplyPlanner } from '../../core/chat/reply-plan.ts';
import { ChatTemplate } from '../../core/chat/template.ts';
import { type GgufHeader, readGgufHeader, tensorBytes } from '../../core/gguf/reader.ts';
import type { ModelBlobs } from '../../core/models/page-files.ts';
import type { ModelInfo } from '../../types.ts';

/** The model's chat template and reply formats (from its GGUF), and its BOS text. */
export interface ChatFormat {
  template: ChatTemplate;
  planner: ReplyPlanner;
  bos: string;
}

/** The size of the model's largest tensor, from its GGUF headers. */
export async function largestTensor(parts: ModelBlobs): Promise<number> {
  let largest = 0;
  for (const { blob } of parts) {
    const header = await readGgufHeader(
      async (o, l) => new Uint8Array(await blob.slice(o, o + l).arrayBuffer()),
      blob.size,
      { skipArrays: true },
    );
    for (const t of header.tensors) largest = Math.max(largest, tensorBytes(t.type, t.dims) ?? 0);
  }
  return largest;
}

/** ModelInfo from the GGUF header (Hearth's reader) and what wllama reports. */
export function modelInfo(w: Wllama, header: GgufHeader, fileName: string, size: number): ModelInfo {
  const ctx = w.getLoadedContextInfo();
  const meta = ctx.metadata ?? {};
  const kv = (k: string) => header.kv.get(k)?.value;
  const arch = String(kv('general.architecture') ?? meta['general.architecture'] ?? 'unknown');
  const num = (k: string) => Number(kv(`${arch}.${k}`) ?? 0);
  const ssm = [...header.kv.keys()].some((k) => k.startsWith(`${arch}.ssm.`));
  const swa = num('attention.sliding_window');
  let nParams = 0;
  for (const t of header.tensors) nParams += t.dims.reduce((a, b) => a * b, 1);
  return {
    name: String(kv('general.name') ?? fileName),
    description: '',
    architecture: arch,
    sizeBytes: size,
    nParams,
    nCtxTrain: ctx.n_ctx_train,
    nEmbd: ctx.n_embd,
    nLayer: ctx.n_layer,
    nHead: num('attention.head_count'),
    nHeadKv: num('attention.head_count_kv') || num('attention.head_count'),
    nVocab: ctx.n_vocab,
    bosToken: ctx.token_bos,
    eosToken: ctx.token_eos,
    eogTokens: ctx.list_tokens_eog,
    chatTemplate: typeof kv('tokenizer.chat_template') === 'string' ? String(kv('tokenizer.chat_template')) : null,
    memory: {
      kind: ssm ? (num('attention.head_count') ? 'hybrid' : 'recurrent') : swa ? 'swa' : 'attention',
      swaWindow: swa,
    },
    metadata: meta,
  };
}

/** llama.cpp's token type of control tokens (special: written as text only when asked). */
const CONTROL = 3;

/** The chat template and reply planner, from the vocabulary in the GGUF (wllama has no tokenizer API). */
export function chatFormat(header: GgufHeader, model: ModelInfo): ChatFormat {
  const tokens = header.kv.get('tokenizer.ggml.tokens')?.value;
  const types = header.kv.get('tokenizer.ggml.token_type')?.value;
  const list = (v: unknown) => (v && typeof v === 'object' && 'values' in v ? (v as { values: unknown[] }).values : []);
  const texts = list(tokens) as string[];
  const kinds = list(types) as number[];
  const control = new Map<string, number>();
  kinds.forEach((kind, id) => {
    if (kind === CONTROL) control.set(texts[id]!, id);
  });
  const text = (id: number) => (id >= 0 ? (texts[id] ?? '') : '');
  const bos = text(model.bosToken);
  const template = new ChatTemplate(model.chatTemplate, { bos, eos: text(model.eosToken) });
  if (template.warning) console.warn(`[hearth] ${template.warning}`);
  return { template, planner: new ReplyPlanner(template.source, (t) => control.get(t) ?? null), bos };
}
