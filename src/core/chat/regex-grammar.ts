// A JavaScript regular expression → GBNF, for a reply that must match it (the Prompt API's RegExp
// responseConstraint). The reply is a whole match of the pattern (so `pattern.test(reply)` holds, anchored or not),
// read by code point as the u flag reads it (a "." is a character, where without the flag it is one UTF-16 unit).
// What a grammar cannot express is refused with an InvalidRequestError naming it: lookarounds, backreferences, word
// boundaries, anchors inside the pattern, the v flag's set notation. Case-insensitive matching folds ASCII letters.
import { InvalidRequestError } from '../../errors.ts';
import { gbnfLiteral } from './json-schema.ts';

/** A class item: one code point or an inclusive range. */
type Range = [number, number];

const DIGIT: Range[] = [[0x30, 0x39]];
const WORD: Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const SPACE: Range[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
/** What `.` leaves out without the s flag: the line terminators. */
const LINE_END: Range[] = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const ESCAPES: Record<string, number> = { n: 0x0a, r: 0x0d, t: 0x09, v: 0x0b, f: 0x0c, '0': 0 };

/** The grammar whose replies are whole matches of `pattern`. `param` names the request parameter in errors. */
export function regexGrammar(pattern: RegExp, param: string): string {
  return `root ::= ${new RegexReader(pattern, param).read()}\n`;
}

class RegexReader {
  private readonly src: string;
  private at = 0;
  private readonly fold: boolean;
  private readonly dotAll: boolean;

  constructor(
    pattern: RegExp,
    private readonly param: string,
  ) {
    this.src = pattern.source;
    this.fold = pattern.flags.includes('i');
    this.dotAll = pattern.flags.includes('s');
    if (pattern.flags.includes('v')) this.fail("the v flag's set notation");
  }

  read(): string {
    const body = this.alternatives(true);
    if (this.at < this.src.length) this.fail(`an unmatched ")" at ${this.at}`);
    return body;
  }

  private fail(what: string): never {
    throw new InvalidRequestError(
      `${this.param}: ${what} cannot be enforced as a grammar; write the pattern without it`,
      'invalid_pattern',
      { param: this.param },
    );
  }

  private peek(): string | undefined {
    return this.src[this.at];
  }

  /** a|b|…, up to a ")" or the end. At the top, ^ may open and $ may end each alternative. */
  private alternatives(top: boolean): string {
    const alts = [this.sequence(top)];
    while (this.peek() === '|') {
      this.at++;
      alts.push(this.sequence(top));
    }
    return alts.length === 1 ? alts[0]! : `(${alts.join(' | ')})`;
  }

  private sequence(top: boolean): string {
    const items: string[] = [];
    if (top && this.peek() === '^') this.at++;
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') break;
      if (c === '$') {
        this.at++;
        const next = this.peek();
        if (top && (next === undefined || next === '|')) break;
        this.fail('a "$" inside the pattern');
      }
      if (c === '^') this.fail('a "^" inside the pattern');
      const atom = this.atom();
      items.push(atom + this.quantifier());
    }
    return items.length ? items.join(' ') : '""';
  }

  private quantifier(): string {
    const c = this.peek();
    let q = '';
    if (c === '*' || c === '+' || c === '?') {
      this.at++;
      q = c;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.at));
      if (!m) return ''; // a literal "{", as JavaScript reads it without the u flag
      this.at += m[0].length;
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === '' ? null : Number(m[3]);
      if (max !== null && max < min) this.fail(`the repetition ${m[0]} (its maximum under its minimum)`);
      q = max === null ? `{${min},}` : min === max ? `{${min}}` : `{${min},${max}}`;
    } else {
      return '';
    }
    if (this.peek() === '?') this.at++; // lazy: the same strings match
    return q;
  }

  private atom(): string {
    const c = this.src[this.at++]!;
    switch (c) {
      case '.':
        return this.dotAll ? '.' : `[^${LINE_END.map(classItem).join('')}]`;
      case '[':
        return this.characterClass();
      case '(':
        return this.group();
      case '\\':
        return this.escape();
      default:
        return this.literal(this.codePointAt(this.at - 1));
    }
  }

  /** The code point at `i` (a surrogate pair read whole); moves past its second half. */
  private codePointAt(i: number): number {
    const cp = this.src.codePointAt(i)!;
    if (cp > 0xffff) this.at = i + 2;
    return cp;
  }

  private group(): string {
    if (this.peek() === '?') {
      const kind = this.src.slice(this.at, this.at + 3);
      if (kind.startsWith('?:')) this.at += 2;
      else if (kind.startsWith('?<') && !kind.startsWith('?<=') && !kind.startsWith('?<!')) {
        const end = this.src.indexOf('>', this.at);
        if (end < 0) this.fail('an unclosed group name');
        this.at = end + 1;
      } else this.fail('a "(?" group other than (?:…) and (?<name>…) (a lookaround, or a modifier)');
    }
    const body = this.alternatives(false);
    if (this.src[this.at++] !== ')') this.fail('an unclosed "("');
    return `(${body})`;
  }

  private escape(): string {
    const c = this.src[this.at++];
    if (c === undefined) this.fail('a "\\" at the end');
    const set = { d: DIGIT, w: WORD, s: SPACE }[c.toLowerCase()];
    if (set) return `[${c === c.toUpperCase() ? '^' : ''}${set.map(classItem).join('')}]`;
    if (c === 'b' || c === 'B') this.fail('a word boundary ("\\b")');
    if (/[1-9]/.test(c) || c === 'k') this.fail('a backreference');
    if (c === 'p' || c === 'P') this.fail('a Unicode property ("\\p{…}")');
    return this.literal(this.escapedCodePoint(c));
  }

  /** The code point of an escape in a literal or a class, after its backslash and `c`. */
  private escapedCodePoint(c: string): number {
    if (c === '0' && /[0-9]/.test(this.peek() ?? '')) this.fail('an octal escape');
    if (c in ESCAPES) return ESCAPES[c]!;
    const hex = (n: number) => {
      const h = this.src.slice(this.at, this.at + n);
      if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(h)) return null;
      this.at += n;
      return Number.parseInt(h, 16);
    };
    if (c === 'x') return hex(2) ?? 0x78;
    if (c === 'u') {
      if (this.peek() === '{') {
        const m = /^\{([0-9a-fA-F]{1,6})\}/.exec(this.src.slice(this.at));
        if (m) {
          this.at += m[0].length;
          return Number.parseInt(m[1]!, 16);
        }
      }
      const unit = hex(4);
      if (unit === null) return 0x75;
      // A surrogate pair written as two \u escapes is one code point.
      if (unit >= 0xd800 && unit < 0xdc00 && this.src.startsWith('\\u', this.at)) {
        const low = Number.parseInt(this.src.slice(this.at + 2, this.at + 6), 16);
        if (low >= 0xdc00 && low < 0xe000) {
          this.at += 6;
          return 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
        }
      }
      return unit;
    }
    if (c === 'c' && /[a-zA-Z]/.test(this.peek() ?? '')) return this.src.charCodeAt(this.at++) % 32;
    return this.codePointAt(this.at - 1);
  }

  /** One character, both cases of a letter where the i flag is set. */
  private literal(cp: number): string {
    const other = this.fold ? otherCase(cp) : null;
    if (other === null) return gbnfLiteral(String.fromCodePoint(cp));
    return `[${classItem([cp, cp])}${classItem([other, other])}]`;
  }

  private characterClass(): string {
    const negated = this.peek() === '^';
    if (negated) this.at++;
    const ranges: Range[] = [];
    for (;;) {
      const c = this.src[this.at++];
      if (c === undefined) this.fail('an unclosed "["');
      if (c === ']') break; // a first "]" too: [] matches nothing, [^] anything
      let lo: number;
      if (c === '\\') {
        const e = this.src[this.at++];
        if (e === undefined) this.fail('a "\\" at the end');
        const set = { d: DIGIT, w: WORD, s: SPACE }[e];
        if (set) {
          ranges.push(...set);
          continue;
        }
        if ('DWS'.includes(e)) this.fail(`a "\\${e}" inside a class`);
        lo = e === 'b' ? 0x08 : e === '-' ? 0x2d : this.escapedCodePoint(e);
      } else lo = this.codePointAt(this.at - 1);
      let hi = lo;
      if (this.peek() === '-' && this.src[this.at + 1] !== ']' && this.src[this.at + 1] !== undefined) {
        this.at++;
        const d = this.src[this.at++]!;
        hi = d === '\\' ? this.escapedCodePoint(this.src[this.at++]!) : this.codePointAt(this.at - 1);
        if (hi < lo) this.fail('a class range out of order');
      }
      ranges.push([lo, hi]);
    }
    if (this.fold) ranges.push(...ranges.flatMap(foldedRanges));
    if (!ranges.length) return negated ? '.' : this.fail('an empty class ("[]"), which matches nothing');
    return `[${negated ? '^' : ''}${ranges.map(classItem).join('')}]`;
  }
}

/** A class item in GBNF: every code point as an escape, so nothing in it reads as class syntax. */
function classItem([lo, hi]: Range): string {
  const one = (cp: number) =>
    /[0-9A-Za-z]/.test(String.fromCodePoint(cp))
      ? String.fromCodePoint(cp)
      : cp <= 0xff
        ? `\\x${cp.toString(16).padStart(2, '0')}`
        : cp <= 0xffff
          ? `\\u${cp.toString(16).padStart(4, '0')}`
          : `\\U${cp.toString(16).padStart(8, '0')}`;
  return lo === hi ? one(lo) : `${one(lo)}-${one(hi)}`;
}

function otherCase(cp: number): number | null {
  if (cp >= 0x41 && cp <= 0x5a) return cp + 32;
  if (cp >= 0x61 && cp <= 0x7a) return cp - 32;
  return null;
}

/** The other case's part of a range's ASCII letters. */
function foldedRanges([lo, hi]: Range): Range[] {
  const out: Range[] = [];
  for (const [a, z, shift] of [
    [0x41, 0x5a, 32],
    [0x61, 0x7a, -32],
  ] as const) {
    const from = Math.max(lo, a);
    const to = Math.min(hi, z);
    if (from <= to) out.push([from + shift, to + shift]);
  }
  return out;
}
