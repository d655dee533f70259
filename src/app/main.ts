// The app: pick a model from the catalogue (first-run.ts, models-view.ts: sizes, whether it fits this device) or any
// GGUF, watch it download and load, chat with streaming; stop, regenerate, edit and resend; code highlighted with a
// Copy button (code-blocks.ts); many conversations, exported and imported (transfer-view.ts), each kept in IndexedDB
// (ui/conversation.ts) with its KV state (by Hearth), so reopening one continues at once; keyboard shortcuts
// (shortcuts.ts).
// Installable: a manifest and a service worker (workers/sw.ts) that keeps the shell and the engine for offline use;
// models come from the model store (OPFS). Model output is untrusted: it reaches the page only as sanitised Markdown. A
// model loaded with its projector reads images (attach, paste, drop) and audio (a file, or the microphone, asked for
// only when Record is pressed); the controls show for what the loaded model reads.
// Here: the chat screen's state (the engine, the open conversation, the answer or the load under way) and what
// changes it: loading a model, sending, stopping, regenerating, editing and resending, opening and starting
// conversations, recording; and the start. The page's elements are elements.ts; the settings and what is kept across
// visits settings.ts; the other-model form model-panel.ts; the header's status line engine-status.ts.
import { createEngine, type HearthEngine, type LoadOptions, type ModelSource, type Progress } from '../index.ts';
import {
  type Attachment,
  conversations,
  messageText,
  newConversation,
  send as sendMessage,
  type SavedConversation,
} from '../ui/conversation.ts';
import { AttachmentTray, attachmentsOf, drawMedia, type MediaKind } from '../ui/attachments.ts';
import { Microphone } from './microphone.ts';
import { renderMarkdown } from '../ui/markdown.ts';
import { bubble as drawBubble, type BubbleRole, sendOnEnter } from '../ui/chat-view.ts';
import { showProgress } from '../ui/progress.ts';
import { Sidebar } from './sidebar.ts';
import { keepUpToDate } from './update.ts';
import { ModelsView } from './models-view.ts';
import { askToKeep, showCatalogue, showStorage } from './first-run.ts';
import { finishCodeBlocks } from './code-blocks.ts';
import { bindTransfer } from './transfer-view.ts';
import { bindShortcuts } from './shortcuts.ts';
import { bindSettings, fallback, restoreSettings, saveSettings, showStoredModels } from './settings.ts';
import { chosenProjector, chosenSource, showKind, TEST_MODEL } from './model-panel.ts';
import { setStatus, showStatus } from './engine-status.ts';
import { $, ui } from './elements.ts';

const tray = new AttachmentTray(document, {
  dropTarget: ui.composer,
  pasteTarget: ui.prompt,
  report: (m) => (ui.attachStatus.textContent = m),
});
ui.composer.before(tray.row);
ui.record.before(tray.button, tray.input);
tray.button.textContent = 'Attach';
const microphone = new Microphone();

let engine: HearthEngine | null = null;
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
    askToKeep(() => void showStorage(engine, ui.storageLine));
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

function setBusy() {
  const busy = generating !== null;
  ui.prompt.disabled = !modelReady;
  ui.send.disabled = !modelReady || busy || microphone.recording;
  ui.stop.disabled = !busy;
  ui.regenerate.disabled = !modelReady || busy || conversation.messages.at(-1)?.role !== 'assistant';
  ui.load.textContent = loading ? 'Cancel' : 'Load';
}

/** Shows what the loaded model reads: the attach button (images, audio files), the record button (audio). */
function showInputs(kinds: MediaKind[]) {
  tray.setKinds(kinds);
  ui.record.hidden = !kinds.includes('audio') && !microphone.recording;
}

function bubble(role: BubbleRole, text: string, index = -1, media: Attachment[] = []): HTMLElement {
  const el = drawBubble(ui.chat, role, text, renderMarkdown);
  drawMedia(el, media);
  if (role === 'assistant') finishCodeBlocks(el);
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

/** Keeps the open conversation, the model choice and the settings (settings.ts). */
function save() {
  saveSettings(ui, conversation.id);
}

async function restore() {
  const saved = restoreSettings(ui);
  if (!saved) return;
  showKind(ui);
  if (saved.conversationId) await openConversation(saved.conversationId);
  else await sidebar.refresh(conversation.id);
}

function onProgress(p: Progress) {
  ui.loadStatus.textContent = showProgress(ui.progress, p);
}

async function loadModel() {
  if (loading) return loading.abort();
  const source = chosenSource(ui);
  if ((!engine && engineFallback !== FAILED) || !source) {
    ui.loadStatus.textContent = engine
      ? 'Choose a model first.'
      : 'The engine is still starting; try again in a moment.';
    return;
  }
  loading = new AbortController();
  try {
    await openModel(source, chosenProjector(ui), loading.signal, onProgress);
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
    if (!engine || JSON.stringify(fallback(ui)) !== engineFallback) await startEngine(); // failed before, or the fallback server changed
    const info = await engine!.load(source, { onProgress: progress, signal, ...(projector ? { projector } : {}) });
    modelReady = true;
    const status = await engine!.info();
    const kinds = (status.input ?? []).filter((k): k is MediaKind => k !== 'text');
    showInputs(kinds);
    const reads = kinds.length ? ` Reads ${kinds.map((k) => (k === 'image' ? 'images' : k)).join(' and ')}.` : '';
    readyText = status.remote
      ? `Ready: ${info.name}, answered by the server at ${status.remote.baseURL}: this browser cannot run the model (${status.selection.reason}).${reads}`
      : `Ready: ${info.name} (${info.description}), context up to ${status.context?.maxCtx ?? 0} tokens.${reads}`;
    showStatus(ui.status, status);
    ui.loadStatus.textContent = readyText;
    showModels(false); // the chat takes the room; the Models button opens the catalogue again
    if (ui.settings.open) void showStoredModels(ui.stored, () => engine);
    save();
    ui.prompt.focus();
  } finally {
    setBusy();
    void showStorage(engine, ui.storageLine);
  }
}

/** Shows or hides the catalogue (the other-model form, with the load status, stays). */
function showModels(open: boolean) {
  ui.catalogue.hidden = !open;
  ui.firstRun.hidden = !open || models.storedModels().length > 0;
  ui.modelsToggle.setAttribute('aria-expanded', String(open));
}

/** Sends the composer's text and attachments (`again`: a message's own, sent anew). */
async function send(text: string, again?: Attachment[]) {
  if (!engine || generating || microphone.recording) return;
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
          // The log follows the answer while the reader is at its end; one who scrolled up to read stays put.
          const following = ui.chat.scrollHeight - ui.chat.scrollTop - ui.chat.clientHeight < 48;
          out.replaceChildren(renderMarkdown(answer));
          if (following) ui.chat.scrollTop = ui.chat.scrollHeight;
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
    finishCodeBlocks(out);
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
    void engine?.info().then(
      (info) => showStatus(ui.status, info),
      () => {},
    );
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

ui.kind.addEventListener('change', () => showKind(ui));
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
bindSettings(ui, save);
bindTransfer(
  { ...ui, status: ui.transferStatus },
  () => conversation,
  () => sidebar.refresh(conversation.id),
);
bindShortcuts(document, {
  stop: () => {
    generating?.abort();
    return generating !== null;
  },
  newChat: () => {
    startNew();
    ui.prompt.focus();
  },
  search: () => ui.search.focus(),
  compose: () => {
    if (!ui.prompt.disabled) ui.prompt.focus();
    return !ui.prompt.disabled;
  },
});
ui.settings.addEventListener('toggle', () => void (ui.settings.open && showStoredModels(ui.stored, () => engine)));
document.addEventListener('visibilitychange', () => {
  if (engine && document.visibilityState === 'visible') {
    void engine.info().then(
      (info) => showStatus(ui.status, info),
      () => {},
    );
  }
});

/** Record, then Stop recording: the clip becomes an attachment. The microphone is asked for here, never before. */
async function record() {
  ui.record.disabled = true;
  try {
    if (!microphone.recording) {
      await microphone.start();
      ui.attachStatus.textContent = 'Recording… press Stop recording to attach the clip.';
    } else {
      ui.attachStatus.textContent = '';
      await tray.add([await microphone.stop()]);
    }
  } catch (err) {
    ui.attachStatus.textContent = `The microphone could not be used: ${(err as Error).message}`;
  } finally {
    ui.record.disabled = false;
    ui.record.textContent = microphone.recording ? 'Stop recording' : 'Record';
    ui.record.setAttribute('aria-pressed', String(microphone.recording));
    setBusy();
  }
}

/** Resolves when no answer is being written (an update's reload waits for it). */
async function whenIdle(): Promise<void> {
  while (generating) await new Promise((resolve) => setTimeout(resolve, 200));
}

async function main() {
  showKind(ui);
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
    showKind(ui);
  }
  await restore();
  try {
    await startEngine();
  } catch (err) {
    setStatus(ui.status, `The engine could not start: ${(err as Error).message}`);
    return;
  }
  await showCatalogue(engine!, models, ui).catch((err) => {
    ui.deviceLine.textContent = `The catalogue could not be shown: ${(err as Error).message}`;
  });
}

async function startEngine() {
  engine?.terminate();
  engine = null;
  engineFallback = 'starting';
  const remote = fallback(ui);
  try {
    // One engine for all the app's tabs: the model is in memory once (see docs/api.md, "One engine for all tabs"). A
    // fallback server is this tab's own choice, so an engine with one is not shared.
    engine = await createEngine(remote ? { fallback: remote } : { shared: true });
  } catch (err) {
    engineFallback = FAILED;
    throw err;
  }
  engineFallback = JSON.stringify(remote);
  showStatus(ui.status, await engine.info());
}

void main();
