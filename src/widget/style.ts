// The widget's styles, adopted by its shadow root as a constructed stylesheet: no <style> element and no inline
// style attribute, so a page's strict Content-Security-Policy (style-src 'self') does not block them. Pages restyle
// it through the --hearth-* custom properties, which cross the shadow boundary.
export const WIDGET_CSS = `
:host { all: initial; position: fixed; right: var(--hearth-offset, 20px); bottom: var(--hearth-offset, 20px); z-index: var(--hearth-z, 2147483000);
  font: var(--hearth-font, 15px/1.45 system-ui, sans-serif); color: var(--hearth-text, #1d1d1f); }
button { font: inherit; cursor: pointer; border-radius: var(--hearth-radius, 12px); border: 0; padding: 8px 14px;
  background: var(--hearth-accent, #c2410c); color: var(--hearth-accent-text, #fff); }
button:disabled { opacity: .5; cursor: default; }
.launcher { border-radius: 999px; padding: 12px 18px; box-shadow: 0 4px 16px rgba(0,0,0,.2); }
.panel { display: flex; flex-direction: column; width: min(380px, calc(100vw - 40px)); height: min(560px, calc(100vh - 40px));
  background: var(--hearth-bg, #fff); border-radius: var(--hearth-radius, 12px); box-shadow: 0 8px 32px rgba(0,0,0,.25); overflow: hidden; }
.panel[hidden], .launcher[hidden], progress[hidden], .status:empty, button[hidden], .remote[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; padding: 10px 14px;
  background: var(--hearth-accent, #c2410c); color: var(--hearth-accent-text, #fff); font-weight: 600; }
header .title { flex: 1; }
header button { background: transparent; padding: 2px 8px; }
header button.new { font-size: 13px; font-weight: 400; border: 1px solid currentColor; }
.menu { padding: 8px 14px; border-bottom: 1px solid rgba(0,0,0,.08); }
.menu[hidden] { display: none; }
.menu button { background: transparent; color: inherit; border: 1px solid rgba(0,0,0,.2); font-size: 13px; }
.note { align-self: center; font-size: 12px; color: var(--hearth-muted, #6b6b70); }
progress { width: 100%; height: 6px; accent-color: var(--hearth-accent, #c2410c); }
.remote { padding: 6px 14px; font-size: 13px; background: var(--hearth-notice, #fff4d6); color: var(--hearth-notice-text, #5c4400); }
.status { padding: 4px 14px; font-size: 13px; color: var(--hearth-muted, #6b6b70); }
/* Model output lives in the log and cannot be drawn outside it (paint containment clips it, and makes the log the
   containing block of anything positioned inside). */
.log { flex: 1; overflow-y: auto; contain: strict; padding: 12px 14px; display: flex; flex-direction: column; gap: 10px; }
.msg { max-width: 88%; padding: 8px 12px; border-radius: var(--hearth-radius, 12px); overflow-wrap: anywhere; }
.msg.user { align-self: flex-end; background: var(--hearth-user-bg, #fde7d9); white-space: pre-wrap; }
.msg.assistant { align-self: flex-start; background: var(--hearth-bot-bg, #f2f2f4); }
.msg.error { align-self: stretch; background: #fde2e2; color: #8a1c1c; }
.msg > :first-child { margin-top: 0; } .msg > :last-child { margin-bottom: 0; }
.msg pre { background: var(--hearth-code-bg, #1f2430); color: #e6e6e6; padding: 8px; border-radius: 6px; overflow-x: auto; }
.msg code { font-family: ui-monospace, monospace; font-size: 13px; }
.msg a { color: var(--hearth-link, #b45309); }
form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid rgba(0,0,0,.08); }
textarea { flex: 1; resize: none; font: inherit; padding: 8px; border-radius: 8px; border: 1px solid rgba(0,0,0,.2); }
`;
