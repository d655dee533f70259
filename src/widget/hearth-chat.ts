// <hearth-chat>: a chat launcher a site adds with one tag. Nothing heavy loads until a visitor opens it: then the
// engine's worker and wasm start, the model downloads into the model store (once per site) with a progress bar,
// and the conversation kept in IndexedDB comes back with its KV state. Model output is rendered as sanitised
// Markdown (ui/markdown.ts), never as raw HTML, into a log box it cannot leave: the widget's own controls are held
// by reference, never looked up in a tree that contains model output. With the `images` attribute (and a model loaded
// with its `projector`), a visitor attaches, pastes or drops images (widget/images.ts, loaded only then).
import type { BackendName, HearthEngine, ModelSource, Progress, Timings } from '../types.ts';
import type { HistoryFit, SavedConversation, StreamingChat } from '../ui/conversation.ts';
import type { AttachmentTray } from '../ui/attachments.ts';
import { bubble, type BubbleRole, sendOnEnter } from '../ui/chat-view.ts';
import { showProgress } from '../ui/progress.ts';
import { WIDGET_CSS } from './style.ts';

/** The reply budget (max_tokens) unless the max-tokens attribute says otherwise. */
const DEFAULT_MAX_TOKENS = 512;
declare const __HEARTH_WIDGET_ASSETS__: string | null | undefined;
/** Where the engine's files are when the page names none (the assets attribute), relative to this script: beside it
 * in the package's static folder (widget/, './'); the package library's own default when a bundler imports
 * 'hearth-llm/widget' (null); dist/hearth/ in this repository's build (scripts/build-widget.mjs, build-package.mjs). */
const OWN_ASSETS = typeof __HEARTH_WIDGET_ASSETS__ === 'undefined' ? '../hearth/' : __HEARTH_WIDGET_ASSETS__;

let sheet: CSSStyleSheet | undefined;

/** Where the status line says reused tokens came from, when not this page's memory. */
const REUSED_FROM: Partial<Record<Timings['cache_source'], string>> = {
  indexeddb: ' (restored from IndexedDB)',
  'prompt-state': " (from the site's prompt state)",
  remote: ' (by the server)',
};

/** What the widget needs once opened, loaded then: a page that never opens the chat does not pay for it (nor one
 * without the `images` attribute for images). */
async function loadChat(images: boolean) {
  const [markdown, conversation, media] = await Promise.all([
    import('../ui/markdown.ts'),
    import('../ui/conversation.ts'),
    images ? import('./images.ts') : null,
  ]);
  return { ...conversation, renderMarkdown: markdown.renderMarkdown, media };
}
type Chat = Awaited<ReturnType<typeof loadChat>>;

/** `hf:owner/repo/file.gguf` → a Hugging Face source; anything else is a URL (relative to the page). */
export function parseModel(value: string): ModelSource {
  const hf = /^hf:([^/]+\/[^/]+)\/(.+)$/.exec(value.trim());
  return hf ? { hf: { repo: hf[1]!, file: hf[2]! } } : new URL(value.trim(), document.baseURI).href;
}

/** An element with properties, attributes and children: the widget's DOM is built this way, never from HTML text. */
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> = {},
  attrs: Record<string, string> = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const el = Object.assign(document.createElement(tag), props);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  el.append(...children);
  return el;
}

/** The widget's controls and regions. */
function buildUi() {
  const button = (className: string, text: string, attrs: Record<string, string> = {}) =>
    h('button', { type: 'button', className, textContent: text }, attrs);
  const ui = {
    launcher: button('launcher', 'Chat', { part: 'launcher', 'aria-haspopup': 'dialog' }),
    title: h('span', { className: 'title' }),
    newChat: button('new', 'New chat', { title: 'Start a new conversation' }),
    more: button('more', '⋯', { 'aria-label': 'More', 'aria-expanded': 'false' }),
    close: button('close', '✕', { 'aria-label': 'Close' }),
    forget: button('forget', 'Delete the downloaded model'),
    progress: h('progress', { hidden: true }),
    status: h('div', { className: 'status' }, { role: 'status' }),
    // Shown while answers come from a server instead of this browser (fallback-url): never silently.
    remote: h('div', { className: 'remote', hidden: true }, { role: 'note', part: 'remote-notice' }),
    log: h('div', { className: 'log' }, { 'aria-live': 'polite' }),
    input: h('textarea', { rows: 2 }, { 'aria-label': 'Message' }),
    send: h('button', { type: 'submit', className: 'send', textContent: 'Send' }),
    stop: button('stop', 'Stop'),
  };
  const menu = h('div', { className: 'menu', hidden: true }, {}, ui.forget);
  const form = h('form', {}, {}, ui.input, ui.send, ui.stop);
  ui.stop.hidden = true;
  const panel = h(
    'section',
    { className: 'panel', hidden: true },
    { part: 'panel', role: 'dialog' },
    h('header', {}, {}, ui.title, ui.newChat, ui.more, ui.close),
    menu,
    ui.remote,
    ui.progress,
    ui.status,
    ui.log,
    form,
  );
  return { ...ui, menu, form, panel };
}

export class HearthChatElement extends HTMLElement {
  static observedAttributes = ['chat-title', 'placeholder'];
  readonly #root = this.attachShadow({ mode: 'open' });
  readonly #ui = buildUi();
  #engine: StreamingChat | null = null;
  #starting: Promise<StreamingChat> | null = null;
  #conversation: SavedConversation | null = null;
  #generating: AbortController | null = null;
  /** Loaded on the first open (loadChat). */
  #chat: Chat | null = null;
  #unwatch: (() => void) | null = null;
  /** The images attached to the message being written (the `images` attribute). */
  #tray: AttachmentTray | null = null;

  constructor() {
    super();
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(WIDGET_CSS);
    }
    this.#root.adoptedStyleSheets = [sheet];
    const ui = this.#ui;
    this.#root.append(ui.launcher, ui.panel);
    ui.launcher.addEventListener('click', () => void this.open());
    ui.close.addEventListener('click', () => this.close());
    ui.stop.addEventListener('click', () => this.#generating?.abort());
    ui.newChat.addEventListener('click', () => void this.newConversation());
    ui.more.addEventListener('click', () => {
      ui.menu.hidden = !ui.menu.hidden;
      ui.more.setAttribute('aria-expanded', String(!ui.menu.hidden));
    });
    ui.forget.addEventListener('click', () => void this.deleteModel().catch(() => {}));
    ui.form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send(ui.input.value).catch(() => {});
    });
    sendOnEnter(ui.input, () => void this.send(ui.input.value).catch(() => {}));
  }

  connectedCallback() {
    this.attributeChangedCallback();
    if (this.#chat) this.#watch(this.#chat);
  }

  disconnectedCallback() {
    this.#unwatch?.();
    this.#unwatch = null;
  }

  /** Another tab of this site may add turns to the same conversation: show them while this one is idle. */
  #watch(chat: Chat) {
    this.#unwatch ??= chat.onConversationChange((id) => {
      if (id === this.#conversation?.id && !this.#generating) void this.#restore(true);
    });
  }

  attributeChangedCallback() {
    const title = this.getAttribute('chat-title') ?? 'Chat';
    this.#ui.title.textContent = title;
    this.#ui.launcher.textContent = title;
    this.#ui.panel.setAttribute('aria-label', title);
    this.#ui.input.placeholder = this.getAttribute('placeholder') ?? 'Ask me anything';
  }

  /** The engine, once the widget has started one (or the one a page gave it); null before the first open. */
  get engine(): StreamingChat | null {
    return this.#engine;
  }

  /** Use this engine (any client with a streamed chat.completions.create, its model loaded) instead of starting one. */
  set engine(engine: StreamingChat | null) {
    this.#engine = engine;
    this.#starting = engine ? Promise.resolve(engine) : null;
  }

  /** Opens the panel, starting the engine and loading the model on the first open. */
  async open(): Promise<void> {
    this.#ui.launcher.hidden = true;
    this.#ui.panel.hidden = false;
    this.#ui.input.focus();
    if (!this.#chat) {
      const chat = (this.#chat = await loadChat(this.hasAttribute('images')));
      if (this.isConnected) this.#watch(chat);
      this.#tray = chat.media?.mountImages(this.#root, this.#ui.form, this.#ui.input, (m) => this.#status(m)) ?? null;
    }
    await this.#ready().catch(() => {});
  }

  close() {
    this.#ui.panel.hidden = true;
    this.#ui.launcher.hidden = false;
  }

  /** Sends a message as the visitor would (with the images attached); resolves with the reply's text. */
  async send(text: string): Promise<string> {
    if ((!text.trim() && !this.#tray?.items.length) || this.#generating) return '';
    let engine: StreamingChat;
    try {
      if (this.#ui.panel.hidden || !this.#chat) await this.open();
      engine = await this.#ready();
    } catch (err) {
      // The engine did not start (or its tab closed as this one joined): the text waits in the box for another try.
      this.#ui.input.value = text;
      throw err;
    }
    const chat = this.#chat!;
    const conversation = this.#conversation!;
    const ui = this.#ui;
    ui.input.value = '';
    const attachments = this.#tray?.take() ?? [];
    const shown = conversation.messages.length;
    const mine = this.#bubble('user', text);
    chat.media?.drawMedia(mine, attachments);
    this.#emit('hearth-message', { role: 'user', content: text, conversationId: conversation.id });
    const out = this.#bubble('assistant', '');
    this.#generating = new AbortController();
    this.#busy(true);
    let pending = 0;
    const render = (answer: string) => {
      // Re-render at most once a frame: a long answer re-parsed per token would slow the stream.
      cancelAnimationFrame(pending);
      pending = requestAnimationFrame(() => out.replaceChildren(chat.renderMarkdown(answer)));
    };
    try {
      const { answer, stopped } = await chat.send(
        conversation,
        engine,
        { text, attachments },
        {
          system: this.getAttribute('system-prompt') ?? undefined,
          signal: this.#generating.signal,
          fit: await this.#fit(engine),
          onText: render,
          onProgress: (p) => this.#progress(p),
          onTimings: (t) =>
            this.#status(t.cache_n ? `${t.cache_n} tokens reused${REUSED_FROM[t.cache_source] ?? ''}` : ''),
        },
      );
      cancelAnimationFrame(pending);
      // Another tab's turns came in before this one (or the history was cut): show the conversation as stored.
      if (conversation.messages.length !== shown + 2 || conversation.start > 0) this.#render();
      else out.replaceChildren(chat.renderMarkdown(answer));
      if (stopped) this.#ui.log.lastElementChild?.append(h('em', { textContent: ' (stopped)' }));
      this.#emit('hearth-message', { role: 'assistant', content: answer, stopped, conversationId: conversation.id });
      return answer;
    } catch (err) {
      cancelAnimationFrame(pending);
      this.#render();
      ui.input.value = text; // nothing the visitor wrote or attached is lost
      this.#tray?.restore(attachments);
      this.#bubble('error', (err as Error).message);
      this.#emit('hearth-error', { error: err });
      throw err;
    } finally {
      this.#generating = null;
      this.#busy(false);
      ui.progress.hidden = true;
    }
  }

  /** Starts a new conversation: the current one is deleted, with its saved KV state. */
  async newConversation(): Promise<void> {
    const chat = this.#chat;
    if (this.#generating || !chat) return;
    const old = this.#conversation;
    this.#conversation = chat.newConversation(this.#conversationId(chat));
    this.#render();
    this.#status('');
    if (!old) return;
    await chat.conversations.delete(old.id).catch(() => {});
    const cache = (this.#engine as Partial<HearthEngine> | null)?.cache;
    await cache?.clear({ conversation_id: old.id }).catch(() => {});
  }

  /** Deletes the model this widget downloaded from the browser's storage; the next message downloads it again. */
  async deleteModel(): Promise<void> {
    const model = this.getAttribute('model');
    this.#ui.menu.hidden = true;
    if (this.#generating || !model) return;
    const engine = (await this.#ready().catch(() => null)) as Partial<HearthEngine> | null;
    if (!engine?.models) return this.#status("This chat's engine keeps no downloaded model.");
    const deleted = await engine.models.delete(parseModel(model) as string | { hf: { repo: string; file: string } });
    // Its prompt state is of no use without it, and is stored beside it.
    const state = this.getAttribute('prompt-state')?.trim();
    if (state) await engine.models.delete(new URL(state, document.baseURI).href).catch(() => false);
    engine.terminate?.(); // the model leaves memory too; a new engine starts on the next message
    this.#engine = null;
    this.#starting = null;
    this.#status(
      deleted
        ? 'The downloaded model was deleted from this browser. It downloads again when you send a message.'
        : 'No downloaded model was stored for this chat.',
    );
  }

  /** The conversation (shown at once), then the engine with its model (started on the first call). */
  async #ready(): Promise<StreamingChat> {
    await this.#restore();
    this.#starting ??= this.#start().catch((err) => {
      this.#starting = null; // the next open tries again
      this.#ui.progress.hidden = true;
      this.#status(`Could not start: ${(err as Error).message}`);
      this.#emit('hearth-error', { error: err });
      throw err;
    });
    return this.#starting;
  }

  async #start(): Promise<StreamingChat> {
    const model = this.getAttribute('model');
    if (!model) throw new Error('<hearth-chat> needs a model attribute: a GGUF URL or hf:owner/repo/file.gguf');
    this.#status('Starting…');
    const { createEngine } = await import('../create-engine.ts');
    const assetsUrl =
      this.getAttribute('assets') ?? (OWN_ASSETS === null ? undefined : new URL(OWN_ASSETS, import.meta.url).href);
    // 'auto': the GPU engine where the visitor's adapter passes its self-test and decodes faster than the CPU engine
    // would, else the CPU engine. Both keep the conversations across reloads (the same KV state); the GPU build is
    // fetched only when the adapter qualifies.
    const backend = (this.getAttribute('backend') ?? 'auto') as BackendName;
    // A server for visitors whose device cannot run the model; off unless the site names one.
    const fallbackUrl = this.getAttribute('fallback-url')?.trim();
    const fallback = fallbackUrl
      ? {
          remote: {
            baseURL: new URL(fallbackUrl, document.baseURI).href,
            model: this.getAttribute('fallback-model')?.trim() || model,
          },
        }
      : null;
    // One model for the site's tabs — among those with the same fallback: a tab without one never answers from a
    // server.
    const shared = fallback ? `hearth-chat ${fallback.remote.baseURL} ${fallback.remote.model}` : 'hearth-chat';
    const engine: HearthEngine = await createEngine({ ...(assetsUrl ? { assetsUrl } : {}), backend, fallback, shared });
    const nCtx = positiveInt(this.getAttribute('context-size'));
    // The system prompt's state, computed by the site (npx hearth prompt-state): the first answer starts after it.
    const promptState = this.getAttribute('prompt-state')?.trim();
    // The model's image encoder (an mmproj GGUF), for the images attribute.
    const projector = this.getAttribute('projector')?.trim();
    try {
      await engine.load(parseModel(model), {
        onProgress: (p) => this.#progress(p),
        ...(nCtx ? { nCtx } : {}),
        ...(projector ? { projector: parseModel(projector) } : {}),
        ...(promptState ? { promptState: new URL(promptState, document.baseURI).href } : {}),
      });
    } catch (err) {
      engine.terminate(); // a retry starts afresh
      throw err;
    }
    this.#ui.progress.hidden = true;
    this.#status('');
    this.#engine = engine;
    const info = await engine.info();
    if (info.remote) {
      this.#ui.remote.textContent = `Answers come from ${new URL(info.remote.baseURL).host}, not from this browser: this device cannot run the model here.`;
      this.#ui.remote.hidden = false;
    }
    this.#emit('hearth-ready', { info });
    return engine;
  }

  /** The history policy's numbers: the reply budget, and the model's context when the engine says. */
  async #fit(engine: StreamingChat): Promise<HistoryFit> {
    const info = (engine as Partial<HearthEngine>).info
      ? await (engine as HearthEngine).info().catch(() => null)
      : null;
    return {
      maxTokens: positiveInt(this.getAttribute('max-tokens')) ?? DEFAULT_MAX_TOKENS,
      contextTokens: info?.context?.maxCtx ?? null,
    };
  }

  #conversationId(chat: Chat): string {
    return chat.widgetConversationId(
      this.getAttribute('storage-key') ?? 'default',
      this.getAttribute('model') ?? '',
      this.getAttribute('system-prompt') ?? '',
    );
  }

  /** The site's conversation for this widget, from IndexedDB, shown once (again with `reload`: another tab's turns). */
  async #restore(reload = false) {
    const chat = this.#chat;
    if (!chat || (this.#conversation && !reload)) return;
    const id = this.#conversationId(chat);
    const stored = await chat.conversations.get(id).catch(() => undefined);
    // Nothing newer than what is shown (this tab's own save): the log stays as it is, an error shown in it too.
    if (reload && !(stored && stored.updatedAt > this.#conversation!.updatedAt)) return;
    this.#conversation = stored ?? this.#conversation ?? chat.newConversation(id);
    this.#render();
  }

  /** The log from the conversation: the welcome, every message, and where the model's reading now starts. */
  #render() {
    const chat = this.#chat;
    if (!chat) return; // not opened yet: open() renders it
    const c = this.#conversation;
    this.#ui.log.replaceChildren();
    const welcome = this.getAttribute('welcome');
    if (welcome) this.#bubble('assistant', welcome);
    c?.messages.forEach((m, i) => {
      if (i === c.start && i > 0) {
        this.#ui.log.append(
          h('div', { className: 'note', textContent: 'Earlier messages are no longer read by the model.' }),
        );
      }
      if (m.role === 'user' || m.role === 'assistant') {
        const el = this.#bubble(m.role, chat.messageText(m));
        chat.media?.drawMedia(el, m);
      }
    });
  }

  #bubble(role: BubbleRole, text: string): HTMLElement {
    return bubble(this.#ui.log, role, text, this.#chat!.renderMarkdown);
  }

  #progress(p: Progress) {
    this.#status(showProgress(this.#ui.progress, p));
    this.#emit('hearth-progress', p);
  }

  #busy(busy: boolean) {
    this.#ui.send.disabled = busy;
    this.#ui.newChat.disabled = busy;
    this.#ui.stop.hidden = !busy;
  }

  #status(text: string) {
    this.#ui.status.textContent = text;
  }

  #emit(type: string, detail: unknown) {
    this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }));
  }
}

function positiveInt(value: string | null): number | undefined {
  const n = Number(value);
  return value !== null && Number.isInteger(n) && n > 0 ? n : undefined;
}

if (!customElements.get('hearth-chat')) customElements.define('hearth-chat', HearthChatElement);
