// Defines globalThis.LanguageModel (and the Writing Assistance APIs' Summarizer, Writer, Rewriter) from a page's
// configuration, where the browser has none (or where the page asks to replace it): `installPromptApi({ model })`, or, for `import 'hearth-llm/prompt-api/polyfill'` and a script tag, the
// JSON of `<script type="application/json" id="hearth-prompt-api">` (data, not code: it passes a strict CSP). The
// engine is created on the first call that needs it, so a page that never prompts starts no worker.
import { createEngine } from '../create-engine.ts';
import type { EngineOptions, LoadOptions, ModelSource } from '../types.ts';
import { QuotaExceededErrorShim, quotaExceededClass } from './dom-errors.ts';
import { CATALOGUE } from '../app/catalogue.ts';
import { ModelHost } from './model-host.ts';
import { languageModelClass } from './sessions.ts';
import { writingAssistanceClasses } from './writing-assistance.ts';

export interface PolyfillConfig {
  /** A URL, { hf: { repo, file } }, or { catalogue: id } (a model of Hearth's app catalogue, with its projector where
   * it has one: `qwen2.5-0.5b`, `gemma-3-4b`, …): downloaded into the model store once, offline afterwards. */
  model: ModelSource | { catalogue: string };
  load?: Omit<LoadOptions, 'signal' | 'onProgress'>;
  engine?: EngineOptions;
  /** Replace the classes the browser already has (Chrome's built-in model). Default false. */
  replaceNative?: boolean;
  /** The languages the model reads and writes, as its model card lists them (PromptApiOptions.languages). */
  languages?: string[];
}

/**
 * Installs LanguageModel, Summarizer, Writer and Rewriter on globalThis, each where the browser has none (or
 * replaceNative), all on one engine and one model; returns LanguageModel (the one already there where it is left
 * alone).
 */
export function installPromptApi(config: PolyfillConfig): unknown {
  const { model, load } = catalogued(config);
  const options = {
    engine: () => createEngine(config.engine),
    model,
    ...(load ? { load } : {}),
    ...(config.languages ? { languages: config.languages } : {}),
  };
  const host = new ModelHost(options);
  const classes: Record<string, unknown> = {
    LanguageModel: languageModelClass(options, host),
    ...writingAssistanceClasses(host),
  };
  const g = globalThis as Record<string, unknown>;
  for (const [name, value] of Object.entries(classes)) {
    if (g[name] && !config.replaceNative) continue;
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true });
  }
  // What LanguageModel throws for a full context, where the browser has no class of it yet.
  if (quotaExceededClass() === QuotaExceededErrorShim) {
    Object.defineProperty(globalThis, 'QuotaExceededError', {
      value: QuotaExceededErrorShim,
      writable: true,
      configurable: true,
    });
  }
  return g.LanguageModel;
}

/** The model and load options a configuration names: a catalogue entry's file and projector (a projector of the
 * configuration's own wins), or its model as it is. An id the catalogue does not have is a TypeError naming those it
 * has. */
export function catalogued(config: PolyfillConfig): { model: ModelSource; load: PolyfillConfig['load'] } {
  const m = config.model as { catalogue?: unknown };
  if (!m || typeof m !== 'object' || !('catalogue' in m))
    return { model: config.model as ModelSource, load: config.load };
  const entry = CATALOGUE.find((e) => e.id === m.catalogue);
  if (!entry) {
    throw new TypeError(
      `the catalogue has no model ${JSON.stringify(m.catalogue)}; it has ${CATALOGUE.map((e) => e.id).join(', ')}`,
    );
  }
  const projector = entry.projector ? { hf: { ...entry.hf, file: entry.projector } } : undefined;
  return {
    model: { hf: entry.hf },
    load: { ...(projector ? { projector } : {}), ...config.load },
  };
}

/** The page's configuration element, checked: a polyfill with no model configured defines nothing (and says why). */
export function pageConfig(doc: Document | undefined = globalThis.document): PolyfillConfig | null {
  const text = doc?.getElementById('hearth-prompt-api')?.textContent;
  if (!text) return null;
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (err) {
    console.warn(`[hearth] #hearth-prompt-api is not JSON (${(err as Error).message}): LanguageModel is not defined`);
    return null;
  }
  const model = (config as { model?: unknown } | null)?.model;
  const hf = (model as { hf?: { repo?: unknown; file?: unknown } } | null)?.hf;
  const id = (model as { catalogue?: unknown } | null)?.catalogue;
  const known = typeof id === 'string' && CATALOGUE.some((e) => e.id === id);
  if (typeof model !== 'string' && !(typeof hf?.repo === 'string' && typeof hf?.file === 'string') && !known) {
    console.warn(
      '[hearth] #hearth-prompt-api names no model (a URL, { "hf": { "repo", "file" } } or { "catalogue": id } of ' +
        `${CATALOGUE.map((e) => e.id).join(', ')})`,
    );
    return null;
  }
  return config as PolyfillConfig;
}
