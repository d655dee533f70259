// The RegExp → GBNF converter (the Prompt API's RegExp responseConstraint): each grammar takes exactly the strings
// that are whole matches of its pattern, checked over every short string of an alphabet and some longer ones
// (llama.cpp runs these grammars in chat-features.test.ts).
import { describe, expect, it } from 'vitest';
import { regexGrammar } from '../../src/core/chat/regex-grammar.ts';
import { InvalidRequestError } from '../../src/errors.ts';
import { gbnfRegex } from './gbnf-regex.ts';

const ALPHABET = ['a', 'B', 'z', '0', '7', '_', ' ', '\n', '"', '\\', '.', '-', ']', 'é', '😀'];
const SHORT = [''];
for (let len = 1, last = ['']; len <= 3; len++) {
  last = last.flatMap((s) => ALPHABET.map((c) => s + c));
  SHORT.push(...last);
}
const LONGER = [
  'hello',
  'Hello',
  'HELLO',
  'hello world',
  'Greetings and salutations!',
  'abc-123',
  'a{2}',
  '2026-12-01',
];

describe('a RegExp as a grammar takes its whole matches, and nothing else', () => {
  it.each([
    /hello/,
    /^hello$/,
    /hello/i,
    /^Greetings and salutations.*/,
    /a|b|/,
    /(ab|z)+0?/,
    /[a-z0-9_]{1,3}/,
    /[^a\n]{2}/,
    // biome-ignore lint/correctness/noEmptyCharacterClassInRegex: [^] (any character) is the case checked
    /[^]/,
    /\d\D/,
    /\w*/,
    /\s\S/,
    /.+/,
    /.{2}/s,
    /[\]\\.-]+/,
    /a{2}/,
    /a{1,}/,
    /a{0,2}?B/,
    /(?:a|B)(?<n>z)/,
    /[A-Z]/i,
    /[^b]/i,
    /\x61\u0042\u{1F600}/u,
    /\uD83D\uDE00/,
    /😀+/u,
    /[é😀]/u,
    /^a$|^z$/,
    /\d{4}-\d{2}-\d{2}/,
    /\./,
    /\n|\t/,
  ])('%s', (re) => {
    const grammar = gbnfRegex(regexGrammar(re, 'responseConstraint'));
    // A reply is code points: a pattern is read as the u flag reads it (a "." is one, not one UTF-16 unit).
    const whole = new RegExp(`^(?:${re.source})$`, `${re.flags.replace('u', '')}u`);
    for (const s of [...SHORT, ...LONGER]) expect(grammar.test(s), JSON.stringify(s)).toBe(whole.test(s));
  });
});

describe('what a grammar cannot express is refused, naming it', () => {
  it.each([
    [/a(?=b)/, /lookaround/],
    [/(?<!a)b/, /lookaround/],
    [/(a)\1/, /backreference/],
    [/\bword\b/, /word boundary/],
    [/a^b/, /"\^" inside/],
    [/a$b/, /"\$" inside/],
    [/\p{L}/u, /Unicode property/],
    [/[\D]/, /inside a class/],
  ])('%s', (re, message) => {
    expect(() => regexGrammar(re, 'responseConstraint')).toThrow(InvalidRequestError);
    expect(() => regexGrammar(re, 'responseConstraint')).toThrow(message);
  });
});
