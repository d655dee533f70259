// The JSON Schema → GBNF converter on its own (the grammars it writes are run by llama.cpp in chat-features.test.ts).
import { describe, expect, it } from 'vitest';
import { gbnfLiteral, schemaGrammar, uintRange } from '../../src/core/chat/json-schema.ts';
import { InvalidRequestError } from '../../src/errors.ts';
import { gbnfRegex } from './gbnf-regex.ts';

// uintRange writes only literals, ranges, {n} and alternatives: close enough to a regular expression to check it.
const toRegex = (gbnf: string) => new RegExp(`^(?:${gbnf.replace(/"(\d+)"/g, '$1').replace(/ /g, '')})$`);

describe('integer ranges', () => {
  it.each([
    [0, 9],
    [1, 14],
    [0, 120],
    [7, 1234],
    [95, 105],
    [100, 999],
    [0, 0],
    [10, 10],
  ])('%i..%i matches exactly those numbers', (lo, hi) => {
    const re = toRegex(uintRange(lo, hi));
    for (let n = 0; n <= 2000; n++) expect(re.test(String(n)), `${n}`).toBe(n >= lo && n <= hi);
    expect(re.test('007')).toBe(false);
  });
  it('an open range takes every larger number', () => {
    const re = toRegex(uintRange(42, null));
    for (let n = 0; n <= 2000; n++) expect(re.test(String(n)), `${n}`).toBe(n >= 42);
    expect(re.test('123456789')).toBe(true);
  });
});

describe('schemas the converter refuses, naming the keyword', () => {
  it.each([
    [{ type: 'string', pattern: 'a+' }, /pattern/],
    [{ type: 'number', maximum: 3.5 }, /number bounds are supported as integers/],
    [{ not: { type: 'string' } }, /"not"/],
    [{ $ref: 'https://example.com/s.json' }, /local references/],
    [{ $ref: '#/$defs/nope' }, /not defined/],
    [{ type: 'object', properties: { a: {} }, required: ['b'] }, /"b" is required/],
    [{ type: 'integer', minimum: 5, maximum: 1 }, /minimum is above maximum/],
    [{ type: 'string', format: 'email' }, /format "email"/],
    [false, /matches nothing/],
  ])('%j', (schema, message) => {
    expect(() => schemaGrammar(schema, 'response_format.json_schema.schema')).toThrow(InvalidRequestError);
    expect(() => schemaGrammar(schema, 'response_format.json_schema.schema')).toThrow(message);
  });
  it('ignores annotations', () => {
    expect(schemaGrammar({ title: 'T', description: 'D', type: 'boolean', default: true }, 'x')).toMatch(
      /^root ::= boolean$/m,
    );
  });
});

describe('literals', () => {
  it('escape what GBNF reads specially', () => {
    expect(gbnfLiteral('a"b\\c\nd\te\u0001')).toBe('"a\\"b\\\\c\\nd\\te\\x01"');
  });
  it('enum values are matched as their JSON text', () => {
    expect(schemaGrammar({ enum: ['a"b', 1, null] }, 'x')).toContain(
      '"\\"a\\\\\\"b\\"" space | "1" space | "null" space',
    );
  });
});

describe('numbers between integer bounds', () => {
  const numbers = [
    ...['0', '0.0', '0.5', '1', '2.25', '4.999', '5', '5.0', '5.000', '5.01', '5.5', '6', '10', '15', '-0.5', '-1'],
    ...['1e3', '0.5e1', '3.', '05', '1.50', '4.0000000000000001'],
  ];
  it.each([
    [{ minimum: 0, maximum: 5 }, (x: number) => x >= 0 && x <= 5],
    [{ exclusiveMinimum: 0, maximum: 5 }, (x: number) => x > 0 && x <= 5],
    [{ minimum: 1, exclusiveMaximum: 5 }, (x: number) => x >= 1 && x < 5],
    [{ minimum: 5, maximum: 5 }, (x: number) => x === 5],
    [{ maximum: 5 }, (x: number) => x <= 5],
    [{ minimum: 2 }, (x: number) => x >= 2],
    [{ exclusiveMinimum: 5, maximum: 10 }, (x: number) => x > 5 && x <= 10],
    [{ maximum: 5, exclusiveMaximum: 7 }, (x: number) => x <= 5],
  ])('%j takes exactly the numbers within', (bounds, within) => {
    const re = gbnfRegex(schemaGrammar({ type: 'number', ...bounds }, 'x'));
    for (const n of numbers) {
      // JSON's own grammar first (no leading zeros, digits after a point), then the bounds.
      const json = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(n);
      expect(re.test(n), n).toBe(json && within(Number(n)));
    }
  });
  it.each([
    [{ minimum: 0.5 }, /minimum: number bounds are supported as integers/],
    [{ minimum: -1 }, /minimum/],
    [{ exclusiveMaximum: 0 }, /exclusiveMaximum/],
    [{ minimum: 6, maximum: 5 }, /no number is within/],
  ])('refuses %j, naming the bound', (bounds, message) => {
    expect(() => schemaGrammar({ type: 'number', ...bounds }, 'x')).toThrow(message);
  });
});
