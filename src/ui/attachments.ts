// Images and audio attached to a message, the same in the app and the widget: a button with a hidden file input,
// paste into the text field, drop on the composer, and a row of what is pending (thumbnails, audio chips, each with
// a ×). A file is taken by its first bytes, not its name or type: only what the engine reads (PNG, JPEG, GIF, BMP;
// WAV, MP3, FLAC) is kept, anything else is refused with a message and never sent. Images are drawn on a <canvas>
// from createImageBitmap, never an <img> with a blob: URL (a strict CSP's img-src need not allow blob:), and a file's
// name reaches the page only as text.
import type { Attachment } from './conversation.ts';
import type { ChatMessage } from '../types.ts';

export type MediaKind = Attachment['kind'];

const ACCEPT: Record<MediaKind, string> = {
  image: 'image/png,image/jpeg,image/gif,image/bmp',
  audio: 'audio/wav,audio/mpeg,audio/flac',
};
const WHAT: Record<MediaKind, string> = { image: 'a PNG, JPEG, GIF or BMP image', audio: 'WAV, MP3 or FLAC audio' };
/** The engine's bounds (docs/api.md, "Images and audio"): checked here so the user hears of them before sending. */
const MAX_BYTES = 20 * 1024 * 1024;
const MAX_ITEMS = 16;

/** What a file is, from its first bytes: an image or a clip the engine reads, or null. */
export async function sniff(blob: Blob): Promise<Omit<Attachment, 'blob'> | null> {
  const b = new Uint8Array(await blob.slice(0, 18).arrayBuffer());
  const text = (from: number, to: number) => String.fromCharCode(...b.subarray(from, to));
  const bmpHeader = [12, 40, 52, 56, 64, 108, 124].includes(b[14]!) && !b[15] && !b[16] && !b[17];
  if (
    (b[0] === 0x89 && text(1, 4) === 'PNG') ||
    (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) ||
    text(0, 4) === 'GIF8' ||
    (text(0, 2) === 'BM' && bmpHeader)
  ) {
    return { kind: 'image' };
  }
  if (text(0, 4) === 'RIFF' && text(8, 12) === 'WAVE') return { kind: 'audio', format: 'wav' };
  if (text(0, 4) === 'fLaC') return { kind: 'audio', format: 'flac' };
  // An ID3 tag, or an MPEG audio frame's sync with a layer (AAC's ADTS frames have none: not MP3).
  if (text(0, 3) === 'ID3' || (b[0] === 0xff && (b[1]! & 0xe0) === 0xe0 && (b[1]! & 0x06) !== 0)) {
    return { kind: 'audio', format: 'mp3' };
  }
  return null;
}

/** A WAV file's length in seconds, from its header; null for other files or a header it cannot read. */
export async function wavSeconds(blob: Blob): Promise<number | null> {
  const d = new DataView(await blob.slice(0, 4096).arrayBuffer());
  if ((await sniff(blob))?.format !== 'wav') return null;
  let byteRate = 0;
  for (let at = 12; at + 8 <= d.byteLength; at += 8 + d.getUint32(at + 4, true) + (d.getUint32(at + 4, true) & 1)) {
    const id = String.fromCharCode(...new Uint8Array(d.buffer, at, 4));
    if (id === 'fmt ' && at + 20 <= d.byteLength) byteRate = d.getUint32(at + 16, true);
    if (id === 'data') return byteRate ? Math.min(d.getUint32(at + 4, true), blob.size - at - 8) / byteRate : null;
  }
  return null;
}

const file = (blob: Blob) => blob as Partial<File>;

/** A message's images and audio, as attachments (to draw them, or send them again: regenerate, edit and resend). */
export function attachmentsOf(m: ChatMessage): Attachment[] {
  return Array.isArray(m.content)
    ? m.content.flatMap((p): Attachment[] =>
        p.type === 'image_url'
          ? [{ kind: 'image', blob: p.image_url.url as Blob }]
          : p.type === 'input_audio'
            ? [{ kind: 'audio', blob: p.input_audio.data as Blob, format: p.input_audio.format }]
            : [],
      )
    : [];
}

/**
 * An attachment as the user sees it: an image drawn on a canvas scaled to fit `size` pixels, or a chip with the clip's
 * name and length (WAV). `remove` adds a × button.
 */
export function mediaView(doc: Document, a: Attachment, size: number, remove?: () => void): HTMLElement {
  const el = doc.createElement('span');
  el.className = 'attachment';
  const name = file(a.blob).name || a.kind;
  const chip = (text: string) =>
    Object.assign(doc.createElement('span'), { className: 'chip', textContent: text, title: name });
  if (a.kind === 'audio') {
    const c = chip(`♪ ${name}`);
    void wavSeconds(a.blob).then(
      (s) => void (s !== null && (c.textContent += ` · ${s.toFixed(1)} s`)),
      () => {},
    );
    el.append(c);
  } else {
    const canvas = Object.assign(doc.createElement('canvas'), { className: 'thumb', width: 1, height: 1, title: name });
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', name);
    createImageBitmap(a.blob).then(
      (bitmap) => {
        const scale = Math.min(1, size / Math.max(bitmap.width, bitmap.height));
        canvas.width = Math.max(1, Math.round(bitmap.width * scale));
        canvas.height = Math.max(1, Math.round(bitmap.height * scale));
        canvas.getContext('2d')?.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
        bitmap.close();
      },
      () => canvas.replaceWith(chip(`${name} (cannot be shown)`)),
    );
    el.append(canvas);
  }
  if (remove) {
    const x = Object.assign(doc.createElement('button'), { type: 'button', className: 'remove', textContent: '×' });
    x.setAttribute('aria-label', `Remove ${name}`);
    x.addEventListener('click', remove);
    el.append(x);
  }
  return el;
}

/** Adds a message's images and clips to its bubble in the log. */
export function drawMedia(bubble: HTMLElement, media: Attachment[] | ChatMessage) {
  const list = Array.isArray(media) ? media : attachmentsOf(media);
  if (!list.length) return;
  const row = bubble.ownerDocument.createElement('div');
  row.className = 'media';
  row.append(...list.map((a) => mediaView(bubble.ownerDocument, a, 160)));
  bubble.prepend(row);
}

export interface TrayOptions {
  /** Where files may be dropped (the composer). */
  dropTarget: HTMLElement;
  /** Where files may be pasted (the text field). */
  pasteTarget: HTMLElement;
  /** Tells the user why a file was refused. */
  report(message: string): void;
}

/**
 * What the user has attached to the message being written. Takes nothing until setKinds names what the model reads;
 * until then paste and drop are left to the page.
 */
export class AttachmentTray {
  /** Attached, in order. */
  readonly items: Attachment[] = [];
  /** The pending attachments (hidden when there are none): place it above the composer. */
  readonly row: HTMLElement;
  /** Opens the file picker; hidden while nothing can be attached. Place it, and `input`, in the composer. */
  readonly button: HTMLButtonElement;
  readonly input: HTMLInputElement;
  #kinds: MediaKind[] = [];

  constructor(
    private readonly doc: Document,
    private readonly opts: TrayOptions,
  ) {
    this.row = Object.assign(doc.createElement('div'), { className: 'pending', hidden: true });
    this.button = Object.assign(doc.createElement('button'), {
      type: 'button',
      className: 'attach',
      textContent: '+',
      hidden: true,
    });
    this.input = Object.assign(doc.createElement('input'), { type: 'file', multiple: true, hidden: true });
    this.button.addEventListener('click', () => this.input.click());
    this.input.addEventListener('change', () => {
      void this.add([...(this.input.files ?? [])]);
      this.input.value = '';
    });
    opts.pasteTarget.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files ?? [])];
      if (!this.#kinds.length || !files.length) return;
      // Text copied with a picture of it (office documents) still pastes as text.
      if (!e.clipboardData!.types.includes('text/plain')) e.preventDefault();
      void this.add(files);
    });
    opts.dropTarget.addEventListener('dragover', (e) => {
      if (this.#kinds.length && e.dataTransfer?.types.includes('Files')) e.preventDefault();
    });
    opts.dropTarget.addEventListener('drop', (e) => {
      const files = [...(e.dataTransfer?.files ?? [])];
      if (!this.#kinds.length || !files.length) return;
      e.preventDefault();
      void this.add(files);
    });
  }

  /** What may be attached: what the model reads (none: no button, paste and drop ignored). */
  setKinds(kinds: MediaKind[]) {
    this.#kinds = kinds;
    this.button.hidden = !kinds.length;
    this.input.accept = kinds.map((k) => ACCEPT[k]).join(',');
    const label =
      kinds.length === 1 ? `Attach ${kinds[0] === 'image' ? 'an image' : 'audio'}` : 'Attach images or audio';
    this.button.title = label;
    this.button.setAttribute('aria-label', label);
  }

  /** Attaches the files this model reads; each other one is refused with a message. */
  async add(files: Blob[]) {
    const refused: string[] = [];
    for (const f of files) {
      const name = file(f).name || 'the pasted file';
      const what = f.size <= MAX_BYTES ? await sniff(f).catch(() => null) : null;
      if (f.size > MAX_BYTES) refused.push(`${name} is larger than 20 MiB`);
      else if (!what || !this.#kinds.includes(what.kind)) {
        refused.push(`${name} is not ${this.#kinds.map((k) => WHAT[k]).join(' or ') || 'what this model reads'}`);
      } else if (this.items.length >= MAX_ITEMS) refused.push(`at most ${MAX_ITEMS} files go with a message`);
      else this.items.push({ ...what, blob: f });
    }
    if (refused.length) this.opts.report(`Not attached: ${refused.join('; ')}.`);
    this.#draw();
  }

  /** The attachments, for sending: the row empties. */
  take(): Attachment[] {
    const taken = this.items.splice(0);
    this.#draw();
    return taken;
  }

  /** Puts attachments back (a send that failed): nothing the user attached is lost. */
  restore(items: Attachment[]) {
    this.items.unshift(...items);
    this.#draw();
  }

  #draw() {
    this.row.replaceChildren(
      ...this.items.map((a) =>
        mediaView(this.doc, a, 56, () => {
          this.items.splice(this.items.indexOf(a), 1);
          this.#draw();
        }),
      ),
    );
    this.row.hidden = !this.items.length;
  }
}
