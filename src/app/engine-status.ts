// The header's status line: what runs the chat (this browser's llama.cpp build, its threads and SIMD; or the fallback
// server) and which tab runs the engine when tabs share it.
import type { EngineInfo } from '../index.ts';

/** What runs the chat, and which tab runs it; refreshed after each load and answer, and when the tab is shown again
 * (other tabs come and go, and the tab that runs the engine may change). */
export function showStatus(status: HTMLElement, info: EngineInfo) {
  if (info.remote) {
    setStatus(
      status,
      `Answers come from the server at ${info.remote.baseURL} (${info.remote.model}), not from this browser`,
    );
    return;
  }
  const shared =
    info.shared && info.shared.tabs > 1
      ? ` · shared by ${info.shared.tabs} tabs${info.shared.leader ? ', run by this one' : ''}`
      : '';
  const build = info.build ?? '';
  setStatus(
    status,
    `llama.cpp ${info.llamaBuild} · WebAssembly ${build.startsWith('mt') ? 'threaded' : 'single-thread'}${build.endsWith('-relaxed') ? ', relaxed SIMD' : ''} · ` +
      `${info.threads} thread${info.threads > 1 ? 's' : ''} · SIMD ${info.wasmSimd ? 'on' : 'off'}${shared}`,
  );
}

/** The engine's status line: one line in the header (style.css), the whole text on hover. */
export function setStatus(status: HTMLElement, text: string) {
  status.textContent = text;
  status.title = text;
}
