// A Content-Security-Policy that blocks part of the engine (the worker script, its wasm, wllama's blob worker) must
// give an error that names the directive, not a hang. Browsers report a block as a 'securitypolicyviolation' event
// on the document, or on the worker's global for the worker's own policy; an engine start listens while it runs.
import { EngineError } from '../errors.ts';

export interface Violation {
  directive: string;
  blockedURI: string;
}

/** Collects the violations `scope` reports until stop(), telling `onViolation` of each. */
export function watchCsp(
  scope: EventTarget | undefined = globalThis.document ?? globalThis,
  onViolation?: (v: Violation) => void,
): { seen: Violation[]; stop(): void } {
  const seen: Violation[] = [];
  const listener = (e: Event) => {
    const v = e as SecurityPolicyViolationEvent;
    const violation = { directive: v.effectiveDirective || v.violatedDirective, blockedURI: v.blockedURI };
    seen.push(violation);
    onViolation?.(violation);
  };
  scope?.addEventListener?.('securitypolicyviolation', listener);
  return { seen, stop: () => scope?.removeEventListener?.('securitypolicyviolation', listener) };
}

/** Whether an error's text is a browser refusing to compile wasm under the worker's CSP (Chromium and Firefox word it
 * so). */
export function isWasmCspError(message: string): boolean {
  return /Content Security Policy|wasm-unsafe-eval|unsafe-eval.*WebAssembly|WebAssembly.*(blocked|refused).*CSP/i.test(
    message,
  );
}

/** The error for what a CSP blocked, saying which directive must allow what (docs/api.md's CSP section). */
export function cspError(what: string, v: Violation | null): EngineError {
  const directive = v?.directive ?? 'script-src';
  const needs =
    directive.startsWith('script-src') && (!v || v.blockedURI === 'wasm-eval' || v.blockedURI === 'eval')
      ? `'wasm-unsafe-eval' in the script-src of the policy sent with /hearth/engine.worker.js`
      : `${source(v?.blockedURI)} in ${directive}`;
  return new EngineError(
    `the Content-Security-Policy blocked ${what}: it needs ${needs} (see the ` +
      '"Content-Security-Policy" section of docs/api.md)',
    'csp_blocked',
    { directive, blockedURI: v?.blockedURI ?? null },
  );
}

/** A blocked URI as a CSP source expression: browsers report a blob: or data: URL by its scheme alone. */
function source(uri: string | undefined): string {
  if (!uri) return 'it';
  return /^[a-z-]+$/.test(uri) ? `${uri}:` : uri;
}
