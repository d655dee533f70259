// <hearth-chat>: a chat launcher a site adds with one tag. Nothing heavy loads until a visitor opens it: then the
// engine's worker and wasm start, the model downloads into the model store (once per site) with a progress bar,
// and the conversation kept in IndexedDB comes back with its KV state. Model output is rendered as sanitised
// Markdown (ui/markdown.ts), never as raw HTML.
import type { HearthClient } from '../worker/client.ts';
import type { ModelSource, Progress } from '../types.ts';
import {
  conversations, messageText, newConversation, send, type SavedConversation, type StreamingChat, WIDGET_ID_PREFIX,
} from '../ui/conversation.ts';
import { describeProgress } from '../ui/progress.ts';
import { WIDGET_CSS } from './style.ts';

const TEMPLATE = `
<button class="launcher" part="launcher" aria-haspopup="dialog">Chat</button>
<section class="panel" part="panel" role="dialog" hidden>
  <header><span class="title"></span><button class="close" aria-label="Close">✕</button></header>
  <progress hidden></progress>
  <div class="status" role="status"></div>
  <div class="log" aria-live="polite"></div>
  <form><textarea rows="2" aria-label="Message"></textarea><button type="submit" class="send">Send</button><button type="button" class="stop" hidden>Stop</button></form>
</section>`;

let sheet: CSSStyleSheet | undefined;

/** `hf:owner/repo/file.gguf` → a Hugging Face source; anything else is a URL (relative to the page). */
export function parseModel(value: string): ModelSource {
  const hf = /^hf:([^/]+\/[^/]+)\/(.+)$/.exec(value.trim());
  return hf ? { hf: { repo: hf[1]!, file: hf[2]! } } : new URL(value.trim(), document.baseURI).href;
}

export class HearthChatElement extends HTMLElement {
  static observedAttributes = ['chat-title', 'placeholder'];
  readonly #root = this.attachShadow({ mode: 'open' });
  #engine: StreamingChat | null = null;
  #starting: Promise<StreamingChat> | null = null;
  #conversation: SavedConversation | null = null;
  #generating: AbortController | null = null;
  /** Loaded on the first open, with the engine: a page that never opens the chat does not pay for it. */
  #markdown: ((text: string) => DocumentFragment) | null = null;

  constructor() {
    super();
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(WIDGET_CSS);
    }
    this.#root.adoptedStyleSheets = [sheet];
    this.#root.innerHTML = TEMPLATE;
    this.#$('.launcher').addEventListener('click', () => void this.open());
    this.#$('.close').addEventListener('click', () => this.close());
    this.#$('.stop').addEventListener('click', () => this.#generating?.abort());
    this.#$('form').addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send(this.#input.value).catch(() => {});
    });
    this.#input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey) {
        e.preventDefault();
        void this.send(this.#input.value).catch(() => {});
      }
    });
  }

  connectedCallback() {
    this.attributeChangedCallback();
  }

  attributeChangedCallback() {
    this.#$('.title').textContent = this.getAttribute('chat-title') ?? 'Chat';
    this.#$('.launcher').textContent = this.getAttribute('chat-title') ?? 'Chat';
    this.#input.placeholder = this.getAttribute('placeholder') ?? 'Ask me anything';
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
    this.#$('.launcher').hidden = true;
    this.#$('.panel').hidden = false;
    this.#input.focus();
    this.#markdown ??= (await import('../ui/markdown.ts')).renderMarkdown;
    await this.#ready().catch(() => {});
  }

  close() {
    this.#$('.panel').hidden = true;
    this.#$('.launcher').hidden = false;
  }

  /** Sends a message as the visitor would; resolves with the reply's text. */
  async send(text: string): Promise<string> {
    if (!text.trim() || this.#generating) return '';
    if (this.#$('.panel').hidden || !this.#markdown) await this.open();
    const engine = await this.#ready();
    const conversation = this.#conversation!;
    this.#input.value = '';
    this.#bubble('user', text);
    this.#emit('hearth-message', { role: 'user', content: text, conversationId: conversation.id });
    const out = this.#bubble('assistant', '');
    this.#generating = new AbortController();
    this.#busy(true);
    let pending = 0;
    const render = (answer: string) => {
      // Re-render at most once a frame: a long answer re-parsed per token would slow the stream.
      cancelAnimationFrame(pending);
      pending = requestAnimationFrame(() => out.replaceChildren(this.#markdown!(answer)));
    };
    try {
      const { answer, stopped } = await send(conversation, engine, text, {
        system: this.getAttribute('system-prompt') ?? undefined, signal: this.#generating.signal,
        onText: render, onProgress: (p) => this.#progress(p),
        onTimings: (t) => this.#status(t.cache_n ? `${t.cache_n} tokens reused${t.cache_source === 'indexeddb' ? ' (restored from IndexedDB)' : ''}` : ''),
      });
      cancelAnimationFrame(pending);
      out.replaceChildren(this.#markdown!(answer));
      if (stopped) out.append(Object.assign(document.createElement('em'), { textContent: ' (stopped)' }));
      this.#emit('hearth-message', { role: 'assistant', content: answer, stopped, conversationId: conversation.id });
      return answer;
    } catch (err) {
      cancelAnimationFrame(pending);
      out.remove();
      this.#input.value = text; // nothing the visitor wrote is lost
      this.#bubble('error', (err as Error).message);
      this.#emit('hearth-error', { error: err });
      throw err;
    } finally {
      this.#generating = null;
      this.#busy(false);
      this.#$('progress').hidden = true;
    }
  }

  /** The conversation (shown at once), then the engine with its model (started on the first call). */
  async #ready(): Promise<StreamingChat> {
    await this.#restore();
    this.#starting ??= this.#start().catch((err) => {
      this.#starting = null; // the next open tries again
      this.#$('progress').hidden = true;
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
    const { createEngine } = await import('../worker/client.ts');
    const assetsUrl = this.getAttribute('assets') ?? new URL(/* @vite-ignore */ '../hearth/', import.meta.url).href;
    const engine: HearthClient = await createEngine({ assetsUrl, shared: 'hearth-chat' }); // one model for the site's tabs
    try {
      await engine.load(parseModel(model), { onProgress: (p) => this.#progress(p) });
    } catch (err) {
      engine.terminate(); // a retry starts afresh
      throw err;
    }
    this.#$('progress').hidden = true;
    this.#status('');
    this.#engine = engine;
    this.#emit('hearth-ready', { info: await engine.info() });
    return engine;
  }

  /** The site's conversation for this widget, from IndexedDB, shown once. */
  async #restore() {
    if (this.#conversation) return;
    const id = `${WIDGET_ID_PREFIX}${this.getAttribute('storage-key') ?? 'default'}`;
    this.#conversation = (await conversations.get(id).catch(() => undefined)) ?? newConversation(id);
    const log = this.#$('.log');
    log.replaceChildren();
    const welcome = this.getAttribute('welcome');
    if (welcome) this.#bubble('assistant', welcome);
    for (const m of this.#conversation.messages) {
      if (m.role === 'user' || m.role === 'assistant') this.#bubble(m.role, messageText(m));
    }
  }

  #bubble(role: 'user' | 'assistant' | 'error', text: string): HTMLElement {
    const el = document.createElement('div');
    el.className = `msg ${role}`;
    if (role === 'assistant') el.append(this.#markdown!(text));
    else el.textContent = text;
    const log = this.#$('.log');
    log.append(el);
    log.scrollTop = log.scrollHeight;
    return el;
  }

  #progress(p: Progress) {
    const bar = this.#$<HTMLProgressElement>('progress');
    bar.hidden = false;
    bar.value = p.total ? p.loaded / p.total : 0;
    this.#status(describeProgress(p));
    this.#emit('hearth-progress', p);
  }

  #busy(busy: boolean) {
    this.#$<HTMLButtonElement>('.send').disabled = busy;
    this.#$('.stop').hidden = !busy;
  }

  #status(text: string) {
    this.#$('.status').textContent = text;
  }

  #emit(type: string, detail: unknown) {
    this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }));
  }

  get #input() {
    return this.#$<HTMLTextAreaElement>('textarea');
  }

  #$<T extends HTMLElement = HTMLElement>(selector: string): T {
    return this.#root.querySelector<T>(selector)!;
  }
}

if (!customElements.get('hearth-chat')) customElements.define('hearth-chat', HearthChatElement);
