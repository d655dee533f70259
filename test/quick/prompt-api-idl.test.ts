// The classes against the specifications' IDL (e2e/wpt/prompt-api.idl, e2e/wpt/writing-assistance-apis.idl, as
// webref extracts them): every operation and attribute of LanguageModel, Summarizer, Writer and Rewriter is there, on
// the class for a static one and on the prototype for the others, under its name.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelHost } from '../../src/prompt-api/model-host.ts';
import { languageModelClass } from '../../src/prompt-api/sessions.ts';
import { writingAssistanceClasses } from '../../src/prompt-api/writing-assistance.ts';

const WPT = join(import.meta.dirname, '..', '..', 'e2e', 'wpt');

/** An interface's members by kind, read from IDL text (its `includes` mixins' too). */
function members(idl: string, name: string) {
  const body = (n: string) =>
    new RegExp(`interface (?:mixin )?${n}\\b[^{]*\\{([\\s\\S]*?)\\n\\};`).exec(idl)?.[1] ?? '';
  const mixins = [...idl.matchAll(new RegExp(`^${name} includes (\\w+);`, 'gm'))].map((m) => m[1]!);
  const text = [name, ...mixins]
    .map(body)
    .join('\n')
    .replace(/\/\/.*$/gm, '');
  const statics = [...text.matchAll(/static [^;]*?(\w+)\(/g)].map((m) => m[1]!);
  const attributes = [...text.matchAll(/attribute [^;]*?(\w+);/g)].map((m) => m[1]!);
  const operations = [...text.replace(/static [^;]*;/g, '').matchAll(/(\w+)\(/g)].map((m) => m[1]!);
  return { statics, attributes, operations };
}

/** What a web page's LanguageModel lacks on purpose: the IDL's extension-only members. */
const EXTENSIONS_ONLY = ['params', 'topK', 'temperature'];

const config = { engine: null as never, model: 'https://example.com/m.gguf' };
const host = new ModelHost(config);
const classes: Record<string, { prototype: object }> = {
  LanguageModel: languageModelClass(config, host),
  ...writingAssistanceClasses(host),
};

describe('the classes have what their IDL has', () => {
  it.each([
    ['prompt-api.idl', 'LanguageModel'],
    ['writing-assistance-apis.idl', 'Summarizer'],
    ['writing-assistance-apis.idl', 'Writer'],
    ['writing-assistance-apis.idl', 'Rewriter'],
  ])('%s: %s', (file, name) => {
    const { statics, attributes, operations } = members(readFileSync(join(WPT, file), 'utf8'), name);
    expect(operations.length + attributes.length).toBeGreaterThan(5); // the IDL was read
    const cls = classes[name]!;
    const missing = [
      ...statics.filter((m) => typeof (cls as unknown as Record<string, unknown>)[m] !== 'function'),
      // Event handlers are fields each object has (set to null), the rest the prototype's.
      ...attributes.filter((m) => !m.startsWith('on') && !(m in cls.prototype)),
      ...operations.filter((m) => typeof (cls.prototype as Record<string, unknown>)[m] !== 'function'),
    ].filter((m) => name !== 'LanguageModel' || !EXTENSIONS_ONLY.includes(m));
    expect(missing).toEqual([]);
    expect(Object.prototype.toString.call(Object.create(cls.prototype))).toBe(`[object ${name}]`);
  });
});
