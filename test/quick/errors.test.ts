// Error codes are unions (src/errors.ts), so `switch (err.code)` over them is complete. TypeScript checks what the
// constructors are given; this test checks the same in the sources as text (a cast or an `any` would slip past the
// compiler), and that a code coming over the wire from another worker or tab cannot leave the union.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CACHE_CODES,
  CacheError,
  ENGINE_CODES,
  EngineError,
  fromWire,
  INVALID_REQUEST_CODES,
  InvalidRequestError,
  MODEL_LOAD_CODES,
  ModelLoadError,
  toWire,
} from '../../src/errors.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CODES: Record<string, readonly string[]> = {
  ModelLoadError: MODEL_LOAD_CODES,
  InvalidRequestError: INVALID_REQUEST_CODES,
  EngineError: ENGINE_CODES,
  CacheError: CACHE_CODES,
};

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** The top-level arguments of the call whose '(' is at `open` (strings, templates and nesting skipped over). */
function callArguments(text: string, open: number): string[] {
  const args: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'" || c === '"' || c === '`') {
      for (i++; i < text.length && text[i] !== c; i++) {
        if (text[i] === '\\') i++;
        else if (c === '`' && text[i] === '$' && text[i + 1] === '{') {
          let inner = 0;
          for (i += 2; i < text.length && !(text[i] === '}' && inner === 0); i++) {
            inner += text[i] === '{' ? 1 : text[i] === '}' ? -1 : 0;
          }
        }
      }
    } else if (c === '(' || c === '[' || c === '{') {
      depth++;
    } else if (c === ')' || c === ']' || c === '}') {
      if (--depth === 0) {
        args.push(text.slice(start, i).trim());
        return args;
      }
    } else if (c === ',' && depth === 1) {
      args.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  throw new Error(`unclosed call at ${open}`);
}

/** Every `new XError(message, 'code'…)` in src/ and workers/ with a literal code: [where, class, code]. */
function literalCodes(): Array<[string, string, string]> {
  return ['src', 'workers'].flatMap(sources).flatMap((file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    return [...text.matchAll(/new (ModelLoadError|InvalidRequestError|EngineError|CacheError)\(/g)].flatMap((m) => {
      const code = callArguments(text, m.index + m[0].length - 1)[1];
      const literal = code && /^'([^']*)'(?:\s+as\s+[\w<>]+)?$/.exec(code)?.[1]; // a cast is what the compiler misses
      return literal ? [[file, m[1]!, literal] as [string, string, string]] : [];
    });
  });
}

describe('error codes', () => {
  it("every code thrown in the sources is in its class's union", () => {
    const found = literalCodes();
    expect(found.length).toBeGreaterThan(80); // the scan finds the constructors (else it passes on nothing)
    expect(
      found
        .filter(([, cls, code]) => !CODES[cls]!.includes(code))
        .map(([file, cls, code]) => `${file}: ${cls} '${code}'`),
    ).toEqual([]);
  });

  it('the scan would catch a code outside the union', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the text is TypeScript source, with a template literal in it
    const text = "throw new EngineError(`a, ${f(1, 2)} b`, 'no_such_code', { x: [1, 2] });";
    // biome-ignore lint/suspicious/noTemplateCurlyInString: as above
    expect(callArguments(text, text.indexOf('('))).toEqual(['`a, ${f(1, 2)} b`', "'no_such_code'", '{ x: [1, 2] }']);
  });

  it('no code is listed twice, and each union is what its class reports', () => {
    for (const [cls, codes] of Object.entries(CODES)) expect(new Set(codes).size, cls).toBe(codes.length);
    expect(new ModelLoadError('m', 'too_large').code).toBe('too_large');
    expect(new InvalidRequestError('m').code).toBe('invalid_request');
  });

  it('keeps class, code and details across the wire, and keeps a hostile code out of the union', () => {
    const back = fromWire(toWire(new ModelLoadError('too big', 'too_large', { bytes: 5 })));
    expect(back).toBeInstanceOf(ModelLoadError);
    expect(back).toMatchObject({ code: 'too_large', details: { bytes: 5 }, message: 'too big' });
    // Another tab (or a page posing as one) sends what it likes.
    expect(fromWire({ name: 'ModelLoadError', code: 'format_c_drive', message: 'x', details: {} }).code).toBe(
      'unsupported',
    );
    expect(fromWire({ name: 'InvalidRequestError', code: '__proto__', message: 'x', details: {} }).code).toBe(
      'invalid_request',
    );
    expect(fromWire({ name: 'CacheError', code: 'nope', message: 'x', details: {} }).code).toBe('cache_error');
    const unknown = fromWire({ name: 'toString', code: 'leader_gone', message: 'x', details: {} });
    expect(unknown).toBeInstanceOf(EngineError);
    expect(unknown.code).toBe('leader_gone');
    expect(fromWire({ name: 'Whatever', code: 'nope', message: 'x', details: {} }).code).toBe('engine_error');
    expect(toWire(new TypeError('plain'))).toEqual({
      name: 'EngineError',
      code: 'engine_error',
      message: 'plain',
      details: {},
    });
    expect(new CacheError('c').code).toBe('cache_error');
  });
});
