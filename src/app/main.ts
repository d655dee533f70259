// The demo chat page: pick a GGUF, watch it load, chat with streaming, stop, ask again. The conversation and the
// model choice are kept in localStorage and the model's KV state in IndexedDB (by Hearth), so after a reload the
// next answer starts without reading the conversation again.
// Model output is untrusted: it only ever reaches the page through textContent.
import { createEngine, type ChatMessage, type HearthClient, type ModelSource, type Progress } from '../index.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  status: $('engine-status'), kind: $<HTMLSelectElement>('source-kind'), testOption: $<HTMLOptionElement>('test-option'),
  hfRepo: $<HTMLInputElement>('hf-repo'), hfFile: $<HTMLInputElement>('hf-file'), url: $<HTMLInputElement>('model-url'),
  file: $<HTMLInputElement>('model-file'), load: $<HTMLButtonElement>('load'), progress: $<HTMLProgressElement>('progress'),
  loadStatus: $('load-status'), chat: $('chat'), composer: $<HTMLFormElement>('composer'),
  prompt: $<HTMLTextAreaElement>('prompt'), send: $<HTMLButtonElement>('send'), stop: $<HTMLButtonElement>('stop'),
  newChat: $<HTMLButtonElement>('new-chat'), stats: $('stats'),
};

const TEST_MODEL = '/test-models/qwen2-hello.gguf';
const SAVED = 'hearth-demo';
let engine: HearthClient | null = null;
let messages: ChatMessage[] = [];
let conversationId = newId();
let readyText = '';
let generating: AbortController | null = null;
let loading: AbortController | null = null;
let modelReady = false;

function showKind() {
  for (const el of document.querySelectorAll<HTMLElement>('[data-kind]')) el.hidden = el.dataset.kind !== ui.kind.value;
}

function setBusy() {
  const busy = generating !== null;
  ui.prompt.disabled = !modelReady;
  ui.send.disabled = !modelReady || busy;
  ui.stop.disabled = !busy;
  ui.load.textContent = loading ? 'Cancel' : 'Load';
}

function bubble(role: 'user' | 'assistant' | 'error', text: string): HTMLElement {
  const el = document.createElement('div');
  el.className = `msg ${role}`;
  el.textContent = text;
  ui.chat.append(el);
  el.scrollIntoView({ block: 'end' });
  return el;
}

function note(el: HTMLElement, text: string) {
  const n = document.createElement('span');
  n.className = 'note';
  n.textContent = text;
  el.append(n);
}

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

function newId(): string {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

/** Keeps the conversation and the model choice (not a local file: it cannot be reopened) for the next visit. */
function save() {
  const model = { kind: ui.kind.value, hfRepo: ui.hfRepo.value, hfFile: ui.hfFile.value, url: ui.url.value };
  try {
    localStorage.setItem(SAVED, JSON.stringify({ messages, conversationId, model }));
  } catch {
    // storage full or disabled: the chat still works, it just is not kept
  }
}

function restore() {
  let saved: { messages?: ChatMessage[]; conversationId?: string; model?: Record<string, string> } = {};
  try {
    saved = JSON.parse(localStorage.getItem(SAVED) ?? '{}');
  } catch {
    return;
  }
  if (Array.isArray(saved.messages)) messages = saved.messages;
  if (saved.conversationId) conversationId = saved.conversationId;
  for (const m of messages) bubble(m.role === 'user' ? 'user' : 'assistant', typeof m.content === 'string' ? m.content : '');
  const model = saved.model ?? {};
  if (model.kind && model.kind !== 'file' && [...ui.kind.options].some((o) => o.value === model.kind && !o.hidden)) ui.kind.value = model.kind;
  if (model.hfRepo) ui.hfRepo.value = model.hfRepo;
  if (model.hfFile) ui.hfFile.value = model.hfFile;
  if (model.url) ui.url.value = model.url;
  showKind();
}

function onProgress(p: Progress) {
  ui.progress.hidden = false;
  ui.progress.value = p.total ? p.loaded / p.total : 0;
  const what = p.phase === 'download' ? 'Downloading' : p.phase === 'load' ? 'Loading into llama.cpp'
    : p.phase === 'restore' ? 'Restoring the conversation' : 'Reading the prompt';
  const amount = p.phase === 'prefill' ? `${p.loaded} of ${p.total} tokens` : `${mb(p.loaded)}${p.total ? ` of ${mb(p.total)}` : ''}`;
  ui.loadStatus.textContent = `${what}: ${amount}`;
}

function chosenSource(): ModelSource | null {
  switch (ui.kind.value) {
    case 'test': return TEST_MODEL;
    case 'hf': return { hf: { repo: ui.hfRepo.value.trim(), file: ui.hfFile.value.trim() } };
    case 'url': return ui.url.value.trim() || null;
    default: return ui.file.files?.[0] ?? null;
  }
}

async function loadModel() {
  if (loading) return loading.abort();
  const source = chosenSource();
  if (!engine || !source) {
    ui.loadStatus.textContent = engine ? 'Choose a model first.' : 'The engine is still starting; try again in a moment.';
    return;
  }
  generating?.abort();
  loading = new AbortController();
  modelReady = false;
  setBusy();
  try {
    const info = await engine.load(source, { onProgress, signal: loading.signal });
    modelReady = true;
    readyText = `Ready: ${info.name} (${info.description}), context up to ${(await engine.info()).context?.maxCtx ?? 0} tokens.`;
    ui.loadStatus.textContent = readyText;
    ui.prompt.focus();
  } catch (err) {
    ui.loadStatus.textContent = `Could not load the model: ${(err as Error).message}`;
  } finally {
    loading = null;
    ui.progress.hidden = true;
    setBusy();
  }
}

async function send(text: string) {
  if (!engine || generating || !text.trim()) return;
  messages.push({ role: 'user', content: text });
  bubble('user', text);
  ui.prompt.value = '';
  const out = bubble('assistant', '');
  generating = new AbortController();
  setBusy();
  const t0 = performance.now();
  let ttft = 0;
  let answer = '';
  try {
    const stream = await engine.chat.completions.create({
      messages, stream: true, signal: generating.signal, conversation_id: conversationId, onProgress,
    });
    ui.progress.hidden = true;
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.content ?? '';
      if (piece && !ttft) ttft = performance.now() - t0;
      answer += piece;
      out.textContent = answer;
      if (chunk.timings) {
        const t = chunk.timings;
        const tps = t.predicted_ms > 0 ? (t.predicted_n / t.predicted_ms) * 1000 : 0;
        const cached = t.cache_n ? ` · ${t.cache_n} cached (${t.cache_source === 'indexeddb' ? 'restored from IndexedDB' : 'in memory'})` : '';
        ui.stats.textContent = `TTFT ${Math.round(ttft)} ms · ${tps.toFixed(1)} tokens/s · prompt ${t.prompt_n} tokens in ` +
          `${Math.round(t.prompt_ms)} ms${cached}`;
      }
    }
    messages.push({ role: 'assistant', content: answer });
  } catch (err) {
    if ((err as Error).name === 'AbortError') {
      messages.push({ role: 'assistant', content: answer }); // keep what was said before Stop
      note(out, 'stopped');
    } else {
      out.remove();
      messages.pop();
      ui.prompt.value = text; // nothing the user wrote is lost
      bubble('error', (err as Error).message);
    }
  } finally {
    generating = null;
    ui.progress.hidden = true;
    ui.loadStatus.textContent = readyText;
    save();
    setBusy();
  }
}

ui.kind.addEventListener('change', showKind);
ui.load.addEventListener('click', () => void loadModel());
ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  void send(ui.prompt.value);
});
ui.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    void send(ui.prompt.value);
  }
});
ui.stop.addEventListener('click', () => generating?.abort());
ui.newChat.addEventListener('click', () => {
  generating?.abort();
  messages = [];
  conversationId = newId();
  ui.chat.replaceChildren();
  save();
});

async function main() {
  showKind();
  setBusy();
  // The dev and preview servers serve generated test models; offer one when it is there.
  const hasTestModel = await fetch(TEST_MODEL, { method: 'HEAD' }).then((r) => r.ok, () => false);
  if (hasTestModel) {
    ui.testOption.hidden = false;
    ui.kind.value = 'test';
    showKind();
  }
  restore();
  try {
    engine = await createEngine();
    const info = await engine.info();
    ui.status.textContent = `llama.cpp ${info.llamaBuild} · WebAssembly ${info.build === 'mt' ? 'threaded' : 'single-thread'} · ` +
      `${info.threads} thread${info.threads > 1 ? 's' : ''} · SIMD ${info.wasmSimd ? 'on' : 'off'}`;
  } catch (err) {
    ui.status.textContent = `The engine could not start: ${(err as Error).message}`;
  }
}

void main();
