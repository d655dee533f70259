// The widget's images (its `images` attribute): attach, paste and drop on the composer, thumbnails in the log. Loaded
// on the first open only by a widget that has the attribute, so that the others do not pay for it.
import { AttachmentTray } from '../ui/attachments.ts';

export { drawMedia } from '../ui/attachments.ts';

const CSS = `
.pending { display: flex; flex-wrap: wrap; gap: 8px; padding: 8px 10px 0; }
.pending[hidden], input[hidden] { display: none; }
.attachment { position: relative; display: inline-flex; }
.thumb { display: block; max-width: 160px; max-height: 120px; border-radius: 6px; }
.pending .thumb { max-width: 56px; max-height: 56px; }
.media { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 4px; }
.chip { padding: 2px 8px; border-radius: 999px; background: rgba(0,0,0,.08); font-size: 13px; }
.remove { position: absolute; top: -6px; right: -6px; padding: 0 5px; border-radius: 999px; font-size: 12px; line-height: 16px; }
form .attach { padding: 8px 12px; font-size: 18px; line-height: 1; background: transparent; color: inherit; border: 1px solid rgba(0,0,0,.2); }
`;

/** Adds the attach button and the pending row to the widget's composer (`form`, its text field `input`), and their
 * styles to its shadow root; refusals go to `report`. */
export function mountImages(
  root: ShadowRoot,
  form: HTMLFormElement,
  input: HTMLTextAreaElement,
  report: (message: string) => void,
): AttachmentTray {
  const tray = new AttachmentTray(document, { dropTarget: form, pasteTarget: input, report });
  tray.setKinds(['image']);
  form.prepend(tray.button, tray.input);
  form.before(tray.row);
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(CSS);
  root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
  return tray;
}
