// The app: pick a GGUF, watch it load, chat with streaming; stop, regenerate, edit and resend; many conversations, each
// kept in IndexedDB (ui/conversation.ts) with its KV state (by Hearth), so reopening one continues at once.
// Installable: a manifest and a service worker (workers/sw.ts) that keeps the shell and the engine for offline use;
// models come from the model store (OPFS). Model output is untrusted: it reaches the page only as sanitised Markdown. A
// model loaded with its projector reads images (attach, paste, drop) and audio (a file, or the microphone, asked for
// only when Record is pressed); the controls show for what the loaded model reads.
import {
  createEngine,
  type EngineInfo,
  type HearthClient,
  type LoadOptions,
  type ModelSource,
  type Progress,
} from '../index.ts';
import {
  type Attachment,
  conversations,
  messageText,
  newConversation,
  send as sendMessage,
  type SavedConversation,
} from '../ui/conversation.ts';
import { AttachmentTray, attachmentsOf, drawMedia, type MediaKind } from '../ui/attachments.ts';
import { Recorder } from './record.ts';
import { renderMarkdown } from '../ui/markdown.ts';
import { formatBytes } from '../core/bytes.ts';
import { bubble as drawBubble, type BubbleRole, sendOnEnter } from '../ui/chat-view.ts';
import { showProgress } from '../ui/progress.ts';
import { Sidebar } from './sidebar.ts';
import { keepUpToDate } from './update.ts';
import { askSizes, CATALOGUE, type CatalogueModel, keptSizes, validEntries } from './catalogue.ts';
import { deviceFacts } from './device.ts';
import { ModelsView } from './models-view.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const ui = {
  status: $('engine-status'),
  kind: $<HTMLSelectElement>('source-kind'),
  testOption: $<HTMLOptionElement>('test-option'),
  hfRepo: $<HTMLInputElement>('hf-repo'),
  hfFile: $<HTMLInputElement>('hf-file'),
  url: $<HTMLInputElement>('model-url'),
  file: $<HTMLInputElement>('model-file'),
  load: $<HTMLButtonElement>('load'),
  progress: $<HTMLProgressElement>('progress'),
  loadStatus: $('load-status'),
  chat: $('chat'),
  composer: $<HTMLFormElement>('composer'),
  prompt: $<HTMLTextAreaElement>('prompt'),
  send: $<HTMLButtonElement>('send'),
  stop: $<HTMLButtonElement>('stop'),
  regenerate: $<HTMLButtonElement>('regenerate'),
  newChat: $<HTMLButtonElement>('new-chat'),
  stats: $('stats'),
  system: $<HTMLTextAreaElement>('system-prompt'),
  temperature: $<HTMLInputElement>('temperature'),
  overflow: $<HTMLSelectElement>('overflow'),
  settings: $<HTMLDetailsElement>('settings'),
  stored: $<HTMLUListElement>('stored-models'),
  update: $('update'),
  updateReload: $<HTMLButtonElement>('update-reload'),
  fallbackUrl: $<HTMLInputElement>('fallback-url'),
  fallbackModel: $<HTMLInputElement>('fallback-model'),
  projectorUrl: $<HTMLInputElement>('projector-url'),
  projectorFile: $<HTMLInputElement>('projector-file'),
  record: $<HTMLButtonElement>('record'),
  attachStatus: $('attach-status'),
  modelsToggle: $<HTMLButtonElement>('models-toggle'),
  catalogue: $('catalogue'),
  firstRun: $('first-run'),
  deviceLine: $('device-line'),
  storageLine: $('storage-line'),
};
const tray = new AttachmentTray(document, {
  dropTarget: ui.composer,
  pasteTarget: ui.prompt,
  report: (m) => (ui.attachStatus.textContent = m),
});
ui.composer.before(tray.row);
ui.record.before(tray.button, tray.input);
tray.button.textContent = 'Attach';
const recorder = new Recorder();

const TEST_MODEL = '/test-models/qwen2-hello.gguf';
const SAVED = 'hearth-demo';
let engine: HearthClient | null = null;
let conversation: SavedConversation = newConversation();
let readyText = '';
let generating: AbortController | null = null;
let loading: AbortController | null = null;
let modelReady = false;
/** The fallback server the engine was created with (the settings' at that time), as JSON; FAILED when it could not
 * start. */
let engineFallback = 'null';
const FAILED = 'failed';

const models = new ModelsView($<HTMLUListElement>('catalogue-list'), () => engine, {
  async load(model, progress, signal) {
    askToKeep();
    const projector = model.projector ? { hf: { ...model.hf, file: model.projector } } : undefined;
    await openModel({ hf: model.hf }, projector, signal, progress);
  },
});

const sidebar = new Sidebar($<HTMLUListElement>('conversations'), $<HTMLInputElement>('search'), {
  open: (c) => void openConversation(c.id),
  deleted: (id) => {
    if (id === conversation.id) startNew();
  },
});

function showKind() {
  for (const el of document.querySelectorAll<HTMLElement>('[data-kind]')) {
    el.hidden = !el.dataset.kind!.split(' ').includes(ui.kind.value);
  }
}

function setBusy() {
  const busy = generating !== null;
  ui.prompt.disabled = !modelReady;
  ui.send.disabled = !modelReady || busy || recorder.recording;
  ui.stop.disabled = !busy;
  ui.regenerate.disabled = !modelReady || busy || conversation.messages.at(-1)?.role !== 'assistant';
  ui.load.textContent = loading ? 'Cancel' : 'Load';
}

/** Shows what the loaded model reads: the attach button (images, audio files), the record button (audio). */
function showInputs(kinds: MediaKind[]) {
  tray.setKinds(kinds);
  ui.record.hidden = !kinds.includes('audio') && !recorder.recording;
}

function bubble(role: BubbleRole, text: string, index = -1, media: Attachment[] = []): HTMLElement {
  const el = drawBubble(ui.chat, role, text, renderMarkdown);
  drawMedia(el, media);
  if (role === 'user' && index >= 0) {
    // Edit and resend: the conversation goes back to before this message, which returns to the composer.
    const edit = Object.assign(document.createElement('button'), {
      type: 'button',
      className: 'edit',
      title: 'Edit and resend',
    });
    edit.setAttribute('aria-label', 'Edit and resend'); // its pencil is CSS: the message's text stays the message
    edit.addEventListener('click', () => {
      if (generating) return;
      conversation.messages = conversation.messages.slice(0, index);
      showConversation();
      ui.prompt.value = text;
      tray.restore(media);
      ui.prompt.focus();
    });
    el.append(edit);
  }
  return el;
}

function note(el: HTMLElement, text: string) {
  const n = document.createElement('span');
  n.className = 'note';
  n.textContent = text;
  el.append(n);
}

function showConversation() {
  ui.chat.replaceChildren();
  conversation.messages.forEach((m, i) => {
    if (m.role === 'user' || m.role === 'assistant') bubble(m.role, messageText(m), i, attachmentsOf(m));
  });
  setBusy();
}

async function openConversation(id: string) {
  generating?.abort();
  conversation = (await conversations.get(id).catch(() => undefined)) ?? newConversation(id);
  showConversation();
  save();
  await sidebar.refresh(conversation.id);
}

function startNew() {
  generating?.abort();
  conversation = newConversation();
  showConversation();
  save();
  void sidebar.refresh(conversation.id);
}

/** Keeps the open conversation, the model choice (not a local file: it cannot be reopened) and the settings. */
function save() {
  const model = {
    kind: ui.kind.value,
    hfRepo: ui.hfRepo.value,
    hfFile: ui.hfFile.value,
    url: ui.url.value,
    projector: ui.projectorUrl.value,
  };
  const settings = {
    system: ui.system.value,
    temperature: ui.temperature.value,
    overflow: ui.overflow.value,
    fallbackUrl: ui.fallbackUrl.value,
    fallbackModel: ui.fallbackModel.value,
  };
  try {
    localStorage.setItem(SAVED, JSON.stringify({ conversationId: conversation.id, model, settings }));
  } catch {
    // storage full or disabled: the chat still works, it just is not kept
  }
}

async function restore() {
  let saved: { conversationId?: string; model?: Record<string, string>; settings?: Record<string, string> } = {};
  try {
    saved = JSON.parse(localStorage.getItem(SAVED) ?? '{}');
  } catch {
    return;
  }
  const model = saved.model ?? {};
  if (model.kind === 'test') ui.testOption.hidden = false; // offered before: it is in the model store, even offline
  if (model.kind && model.kind !== 'file' && [...ui.kind.options].some((o) => o.value === model.kind && !o.hidden)) {
    ui.kind.value = model.kind;
  }
  if (model.hfRepo) ui.hfRepo.value = model.hfRepo;
  if (model.hfFile) ui.hfFile.value = model.hfFile;
  if (model.url) ui.url.value = model.url;
  if (model.projector) ui.projectorUrl.value = model.projector;
  const settings = saved.settings ?? {};
  if (settings.system !== undefined) ui.system.value = settings.system;
  if (settings.temperature) ui.temperature.value = settings.temperature;
  if (settings.overflow) ui.overflow.value = settings.overflow;
  if (settings.fallbackUrl) ui.fallbackUrl.value = settings.fallbackUrl;
  if (settings.fallbackModel) ui.fallbackModel.value = settings.fallbackModel;
  showKind();
  if (saved.conversationId) await openConversation(saved.conversationId);
  else await sidebar.refresh(conversation.id);
}

function onProgress(p: Progress) {
  ui.loadStatus.textContent = showProgress(ui.progress, p);
}

function chosenSource(): ModelSource | null {
  switch (ui.kind.value) {
    case 'test':
      return TEST_MODEL;
    case 'hf':
      return { hf: { repo: ui.hfRepo.value.trim(), file: ui.hfFile.value.trim() } };
    case 'url':
      return ui.url.value.trim() || null;
    default:
      return ui.file.files?.[0] ?? null;
  }
}

/** The model's projector (an mmproj GGUF), so that it reads images or audio: a URL, or for a Hugging Face model a
 * file in its repo; a local file beside a local model. None for the test model. */
function chosenProjector(): LoadOptions['projector'] {
  if (ui.kind.value === 'file') return ui.projectorFile.files?.[0];
  const value = ui.projectorUrl.value.trim();
  if (!value || ui.kind.value === 'test') return undefined;
  return ui.kind.value === 'hf' && !/[:/]/.test(value) ? { hf: { repo: ui.hfRepo.value.trim(), file: value } } : value;
}

async function loadModel() {
  if (loading) return loading.abort();
  const source = chosenSource();
  if ((!engine && engineFallback !== FAILED) || !source) {
    ui.loadStatus.textContent = engine
      ? 'Choose a model first.'
      : 'The engine is still starting; try again in a moment.';
    return;
  }
  loading = new AbortController();
  try {
    await openModel(source, chosenProjector(), loading.signal, onProgress);
  } catch (err) {
    ui.loadStatus.textContent = `Could not load the model: ${(err as Error).message}`;
  } finally {
    loading = null;
    ui.progress.hidden = true;
    setBusy();
  }
}

/** Loads a model (downloading what the model store lacks) and makes the chat ready for it; throws what load throws. */
async function openModel(
  source: ModelSource,
  projector: LoadOptions['projector'],
  signal: AbortSignal,
  progress: (p: Progress) => void,
) {
  generating?.abort();
  modelReady = false;
  showInputs([]);
  setBusy();
  try {
    if (!engine || JSON.stringify(fallback()) !== engineFallback) await startEngine(); // failed before, or the fallback server changed
    const info = await engine!.load(source, { onProgress: progress, signal, ...(projector ? { projector } : {}) });
    modelReady = true;
    const status = await engine!.info();
    const kinds = (status.input ?? []).filter((k): k is MediaKind => k !== 'text');
    showInputs(kinds);
    const reads = kinds.length ? ` Reads ${kinds.map((k) => (k === 'image' ? 'images' : k)).join(' and ')}.` : '';
    readyText = status.remote
      ? `Ready: ${info.name}, answered by the server at ${status.remote.baseURL}: this browser cannot run the model (${status.selection.reason}).${reads}`
      : `Ready: ${info.name} (${info.description}), context up to ${status.context?.maxCtx ?? 0} tokens.${reads}`;
    showStatus(status);
    ui.loadStatus.textContent = readyText;
    showModels(false); // the chat takes the room; the Models button opens the catalogue again
    if (ui.settings.open) void showStoredModels();
    save();
    ui.prompt.focus();
  } finally {
    setBusy();
    void showStorage();
  }
}

/** Shows or hides the catalogue (the other-model form, with the load status, stays). */
function showModels(open: boolean) {
  ui.catalogue.hidden = !open;
  ui.firstRun.hidden = !open || models.storedModels().length > 0;
  ui.modelsToggle.setAttribute('aria-expanded', String(open));
}

/**
 * Before a download: asks the browser to keep this site's storage (navigator.storage.persist()), so that a downloaded
 * model is not cleared when the disk runs low. Asked here, on the visitor's click, where a browser that prompts for it
 * has a reason to show. Not waited for: Firefox asks the visitor, who may answer late or never, and the download need
 * not wait; the storage line says what the browser answered.
 */
function askToKeep() {
  void navigator.storage
    ?.persisted?.()
    .then((kept) => kept || navigator.storage.persist())
    .then(showStorage, () => {});
}

/** The storage line: what the models take, what the site may use, and whether the browser keeps it. */
async function showStorage() {
  const usage = await engine?.models.usage().catch(() => null);
  if (!usage) return;
  const site =
    usage.used !== null && usage.quota !== null
      ? ` · this site uses ${formatBytes(usage.used)} of the ${formatBytes(usage.quota)} the browser allows it`
      : '';
  const kept =
    usage.persisted === true
      ? 'the browser keeps them even when the disk runs low'
      : usage.persisted === false
        ? 'the browser may clear them when the disk runs low (they would be downloaded again)'
        : '';
  ui.storageLine.textContent = `Downloaded models: ${formatBytes(usage.models)}${site}${kept ? `. ${kept[0]!.toUpperCase()}${kept.slice(1)}.` : '.'}`;
}

const EXTRA_CATALOGUE = 'hearth-test-catalogue';

/** The catalogue: the app's list and, on the test servers, their test entries (whose Hub is the test server). */
async function showCatalogue() {
  const extra = await fetch('/test-models/catalogue.json')
    .then(
      async (r) => {
        const body = r.ok ? await r.json() : null;
        localStorage.setItem(EXTRA_CATALOGUE, JSON.stringify(body));
        return body;
      },
      () => JSON.parse(localStorage.getItem(EXTRA_CATALOGUE) ?? 'null'), // offline: as it was last
    )
    .catch(() => null);
  const endpoint = typeof extra?.endpoint === 'string' ? (extra.endpoint as string) : undefined;
  const list: CatalogueModel[] = [...validEntries(extra), ...CATALOGUE].map((m) =>
    endpoint ? { ...m, hf: { ...m.hf, endpoint } } : m,
  );
  models.show(list, keptSizes());
  await models.refresh();
  ui.firstRun.hidden = models.storedModels().length > 0;
  void showStorage();
  void askSizes(list, (id, size) => models.setSize(id, size));
  const info = await engine!.info();
  const facts = await deviceFacts(info, { probe: true });
  models.setDevice(facts);
  const memory =
    facts.deviceMemoryGiB !== null ? ` · about ${facts.deviceMemoryGiB} GB of memory, as the browser says` : '';
  const probe = facts.probe ? ` · reads ${(facts.probe.bytesPerSecond / 1e9).toFixed(1)} GB/s (measured)` : '';
  const runs =
    facts.backend === 'webgpu'
      ? `the GPU (${info.gpu?.adapter ?? 'WebGPU'})`
      : `the CPU, ${info.threads} thread${info.threads > 1 ? 's' : ''}`;
  ui.deviceLine.textContent = `This device: models run on ${runs}${probe}${memory}.`;
}

/** Sends the composer's text and attachments (`again`: a message's own, sent anew). */
async function send(text: string, again?: Attachment[]) {
  if (!engine || generating || recorder.recording) return;
  const attachments = again ?? tray.take();
  if (!text.trim() && !attachments.length) return;
  bubble('user', text, conversation.messages.length, attachments);
  ui.prompt.value = '';
  ui.attachStatus.textContent = '';
  const out = bubble('assistant', '');
  generating = new AbortController();
  setBusy();
  const t0 = performance.now();
  let ttft = 0;
  try {
    const temperature = Number(ui.temperature.value);
    const { answer, stopped } = await sendMessage(
      conversation,
      engine,
      { text, attachments },
      {
        signal: generating.signal,
        onProgress,
        system: ui.system.value.trim() || undefined,
        params: {
          temperature: Number.isFinite(temperature) ? temperature : undefined,
          context_overflow: ui.overflow.value as 'stop' | 'shift' | 'error',
        },
        onText: (answer) => {
          if (!ttft) ttft = performance.now() - t0;
          ui.progress.hidden = true;
          out.replaceChildren(renderMarkdown(answer));
        },
        onTimings: (t) => {
          const tps = t.predicted_ms > 0 ? (t.predicted_n / t.predicted_ms) * 1000 : 0;
          const cached = t.cache_n
            ? ` · ${t.cache_n} cached (${t.cache_source === 'indexeddb' ? 'restored from IndexedDB' : 'in memory'})`
            : '';
          ui.stats.textContent =
            `TTFT ${Math.round(ttft)} ms · ${tps.toFixed(1)} tokens/s · prompt ${t.prompt_n} tokens in ` +
            `${Math.round(t.prompt_ms)} ms${cached}`;
        },
      },
    );
    out.replaceChildren(renderMarkdown(answer));
    if (stopped) note(out, 'stopped');
  } catch (err) {
    out.previousElementSibling?.remove(); // the user's message goes back to the composer
    out.remove();
    ui.prompt.value = text; // nothing the user wrote or attached is lost
    tray.restore(attachments);
    bubble('error', (err as Error).message);
  } finally {
    generating = null;
    ui.progress.hidden = true;
    ui.loadStatus.textContent = readyText;
    save();
    setBusy();
    void sidebar.refresh(conversation.id);
    // A changed fallback server replaces the engine while an answer is stopped: there may be none for a moment.
    void engine?.info().then(showStatus, () => {});
  }
}

/** Asks again for the last answer: the last exchange is taken back and the user's message sent anew. */
function regenerate() {
  const messages = conversation.messages;
  if (generating || messages.at(-1)?.role !== 'assistant' || messages.at(-2)?.role !== 'user') return;
  const text = messageText(messages.at(-2)!);
  const media = attachmentsOf(messages.at(-2)!);
  conversation.messages = messages.slice(0, -2);
  showConversation();
  void send(text, media);
}

ui.kind.addEventListener('change', showKind);
ui.load.addEventListener('click', () => void loadModel());
ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  void send(ui.prompt.value);
});
sendOnEnter(ui.prompt, () => void send(ui.prompt.value));
ui.stop.addEventListener('click', () => generating?.abort());
ui.regenerate.addEventListener('click', regenerate);
ui.record.addEventListener('click', () => void record());
ui.newChat.addEventListener('click', startNew);
ui.modelsToggle.addEventListener('click', () => showModels(ui.modelsToggle.getAttribute('aria-expanded') !== 'true'));
for (const el of [ui.system, ui.temperature, ui.overflow]) el.addEventListener('change', save);
ui.settings.addEventListener('toggle', () => void (ui.settings.open && showStoredModels()));
document.addEventListener('visibilitychange', () => {
  if (engine && document.visibilityState === 'visible') void engine.info().then(showStatus, () => {});
});

/** Record, then Stop recording: the clip becomes an attachment. The microphone is asked for here, never before. */
async function record() {
  ui.record.disabled = true;
  try {
    if (!recorder.recording) {
      await recorder.start();
      ui.attachStatus.textContent = 'Recording… press Stop recording to attach the clip.';
    } else {
      ui.attachStatus.textContent = '';
      await tray.add([await recorder.stop()]);
    }
  } catch (err) {
    ui.attachStatus.textContent = `The microphone could not be used: ${(err as Error).message}`;
  } finally {
    ui.record.disabled = false;
    ui.record.textContent = recorder.recording ? 'Stop recording' : 'Record';
    ui.record.setAttribute('aria-pressed', String(recorder.recording));
    setBusy();
  }
}

/** The models in the model store, each with a Delete button (the space they take goes back to the visitor). */
async function showStoredModels() {
  const models = engine ? await engine.models.list().catch(() => []) : [];
  ui.stored.replaceChildren(
    ...models.map((m) => {
      const li = document.createElement('li');
      const remove = Object.assign(document.createElement('button'), {
        type: 'button',
        className: 'delete-model',
        textContent: 'Delete',
      });
      remove.addEventListener('click', async () => {
        remove.disabled = true;
        await engine?.models.delete(m.id).catch(() => false);
        await showStoredModels();
      });
      const size = `${formatBytes(m.size ?? m.downloaded)}${m.complete ? '' : ' (incomplete)'}`;
      li.append(
        Object.assign(document.createElement('span'), { className: 'model-name', textContent: `${m.name} · ${size}` }),
        remove,
      );
      return li;
    }),
  );
  if (!models.length) {
    ui.stored.append(Object.assign(document.createElement('li'), { className: 'muted', textContent: 'none' }));
  }
}

/** Resolves when no answer is being written (an update's reload waits for it). */
async function whenIdle(): Promise<void> {
  while (generating) await new Promise((resolve) => setTimeout(resolve, 200));
}

/** What runs the chat, and which tab runs it; refreshed after each load and answer, and when the tab is shown again
 * (other tabs come and go, and the tab that runs the engine may change). */
function showStatus(info: EngineInfo) {
  if (info.remote) {
    setStatus(`Answers come from the server at ${info.remote.baseURL} (${info.remote.model}), not from this browser`);
    return;
  }
  const shared =
    info.shared && info.shared.tabs > 1
      ? ` · shared by ${info.shared.tabs} tabs${info.shared.leader ? ', run by this one' : ''}`
      : '';
  const build = info.build ?? '';
  setStatus(
    `llama.cpp ${info.llamaBuild} · WebAssembly ${build.startsWith('mt') ? 'threaded' : 'single-thread'}${build.endsWith('-relaxed') ? ', relaxed SIMD' : ''} · ` +
      `${info.threads} thread${info.threads > 1 ? 's' : ''} · SIMD ${info.wasmSimd ? 'on' : 'off'}${shared}`,
  );
}

/** The engine's status line: one line in the header (style.css), the whole text on hover. */
function setStatus(text: string) {
  ui.status.textContent = text;
  ui.status.title = text;
}

async function main() {
  showKind();
  setBusy();
  // Installable and offline: the service worker keeps the shell and the engine (not in dev, where files change).
  if ('serviceWorker' in navigator && !import.meta.env.DEV) {
    keepUpToDate((apply) => {
      ui.update.hidden = false;
      ui.updateReload.onclick = apply;
    }, whenIdle);
  }
  // The dev and preview servers serve generated test models; offer one when it is there.
  const hasTestModel = await fetch(TEST_MODEL, { method: 'HEAD' }).then(
    (r) => r.ok,
    () => false,
  );
  if (hasTestModel) {
    ui.testOption.hidden = false;
    ui.kind.value = 'test';
    showKind();
  }
  await restore();
  try {
    await startEngine();
  } catch (err) {
    setStatus(`The engine could not start: ${(err as Error).message}`);
    return;
  }
  await showCatalogue().catch((err) => {
    ui.deviceLine.textContent = `The catalogue could not be shown: ${(err as Error).message}`;
  });
}

/** The fallback server in the settings, or null when its URL is empty (the default: nothing leaves the browser). */
function fallback() {
  const baseURL = ui.fallbackUrl.value.trim();
  return baseURL ? { remote: { baseURL, model: ui.fallbackModel.value.trim() || 'default' } } : null;
}

async function startEngine() {
  engine?.terminate();
  engine = null;
  engineFallback = 'starting';
  const remote = fallback();
  try {
    // One engine for all the app's tabs: the model is in memory once (see README, "One engine for all tabs"). A
    // fallback server is this tab's own choice, so an engine with one is not shared.
    engine = await createEngine(remote ? { fallback: remote } : { shared: true });
  } catch (err) {
    engineFallback = FAILED;
    throw err;
  }
  engineFallback = JSON.stringify(remote);
  showStatus(await engine.info());
}

void main();
