// JSON Schema → GBNF, for llama.cpp's grammar sampler: response_format json_schema and the arguments of forced tool
// calls. Every keyword that constrains a value is either enforced or refused with an InvalidRequestError (a grammar
// that ignored one would let through JSON that does not validate); annotations (title, description, …) are ignored.
// Object properties come in schema order: required ones always, optional ones when the model writes them.
import { InvalidRequestError } from '../../errors.ts';

type Schema = Record<string, unknown> | boolean;

/** Whitespace between tokens: kept short, so a model cannot run on in blank lines. */
const SPACE = '| " " | "\\n" [ \\t]{0,20}';

const PRIMITIVES: Record<string, string> = {
  space: SPACE,
  boolean: '("true" | "false") space',
  null: '"null" space',
  // Unicode scalar values only, not the UTF-16 surrogates: llama.cpp's grammar decodes the bytes ED A0 80–ED BF BF
  // to them, which are not UTF-8 (a decoder makes each byte a U+FFFD, and the string outgrows its maxLength). A
  // positive class: for a token that ends inside a character, llama.cpp allows it when some completion is in a
  // positive class, but refuses it when any completion is in a negated one (ED 9F BF, U+D7FF, would be lost too).
  char: '[\\x20-\\x21\\x23-\\x5B\\x5D-\\x7E\\x80-\\uD7FF\\uE000-\\U0010FFFF] | [\\\\] (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
  string: '"\\"" char* "\\"" space',
  'integral-part': '[0] | [1-9] [0-9]{0,15}',
  integer: '"-"? integral-part space',
  number: '"-"? integral-part ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,4})? space',
  value: 'object | array | string | number | boolean | null',
  object: '"{" space ( string ":" space value ("," space string ":" space value)* )? "}" space',
  array: '"[" space ( value ("," space value)* )? "]" space',
};

/** Which primitives each one uses (a grammar lists only the rules it reaches). */
const USES: Record<string, string[]> = {
  boolean: ['space'],
  null: ['space'],
  string: ['char', 'space'],
  integer: ['integral-part', 'space'],
  number: ['integral-part', 'space'],
  value: ['object', 'array', 'string', 'number', 'boolean', 'null'],
  object: ['string', 'value', 'space'],
  array: ['value', 'space'],
};

const ANNOTATIONS = new Set([
  'title',
  'description',
  'examples',
  'default',
  '$schema',
  '$id',
  '$comment',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$defs',
  'definitions',
  'strict',
  'nullable',
]);
const HANDLED = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  '$ref',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'format',
]);

/** A GBNF string literal that matches `text` exactly. */
export function gbnfLiteral(text: string): string {
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Builds one grammar: rules by name, primitives added as they are used, schemas converted into rules. */
export class GrammarBuilder {
  private readonly rules = new Map<string, string>();
  private readonly refs = new Map<string, string>();
  private root: Schema = true;

  /** `param` names the request parameter in errors. */
  constructor(private readonly param: string) {}

  /** Adds a rule (a fresh name derived from `name` when it is taken by another body); returns its name. */
  rule(name: string, body: string): string {
    const base = name.replace(/[^a-zA-Z0-9-]+/g, '-').replace(/^-+|-+$/g, '') || 'r';
    for (let i = 0, n = base; ; n = `${base}-${++i}`) {
      const have = this.rules.get(n);
      if (have === undefined || have === body) {
        this.rules.set(n, body);
        return n;
      }
    }
  }

  /** A primitive rule (string, number, value, …) and those it uses. */
  primitive(name: string): string {
    if (!this.rules.has(name)) {
      this.rules.set(name, PRIMITIVES[name]!);
      for (const dep of USES[name] ?? []) this.primitive(dep);
    }
    return name;
  }

  /** The rule for values that validate against `schema` (whose $refs resolve within `root`). */
  schema(schema: unknown, name: string, root: unknown = schema): string {
    this.root = root as Schema;
    return this.visit(schema, name, '');
  }

  /** The grammar text, with `root` as its start rule. */
  text(root: string): string {
    const lines = [`root ::= ${root}`];
    for (const [name, body] of this.rules) lines.push(`${name} ::= ${body}`);
    return `${lines.join('\n')}\n`;
  }

  private fail(path: string, message: string): never {
    throw new InvalidRequestError(`${this.param}${path}: ${message}`, 'invalid_schema', { param: this.param });
  }

  private visit(s: unknown, name: string, path: string): string {
    if (s === true || (s && typeof s === 'object' && Object.keys(s).every((k) => ANNOTATIONS.has(k)))) {
      return this.primitive('value');
    }
    if (s === false) this.fail(path, 'a false schema matches nothing');
    if (!s || typeof s !== 'object' || Array.isArray(s)) this.fail(path, 'expected a JSON Schema object');
    const o = s as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      if (!ANNOTATIONS.has(key) && !HANDLED.has(key)) {
        this.fail(
          `${path}.${key}`,
          `"${key}" is not supported in structured output; remove it or express it with the supported keywords`,
        );
      }
    }
    if (typeof o.$ref === 'string') return this.ref(o.$ref, path);
    if ('const' in o) return this.rule(name, this.jsonLiteral(o.const));
    if (Array.isArray(o.enum)) {
      if (!o.enum.length) this.fail(`${path}.enum`, 'expected at least one value');
      return this.rule(name, o.enum.map((v) => this.jsonLiteral(v)).join(' | '));
    }
    const alts = (o.anyOf ?? o.oneOf) as unknown;
    if (alts !== undefined) {
      if (!Array.isArray(alts) || !alts.length) this.fail(`${path}.anyOf`, 'expected a non-empty array of schemas');
      return this.rule(name, alts.map((a, i) => this.visit(a, `${name}-${i}`, `${path}.anyOf[${i}]`)).join(' | '));
    }
    const type = o.type;
    if (Array.isArray(type)) {
      return this.rule(name, type.map((t) => this.visit({ ...o, type: t }, `${name}-${t}`, path)).join(' | '));
    }
    switch (type) {
      case 'object':
        return this.object(o, name, path);
      case 'array':
        return this.array(o, name, path);
      case 'string':
        return this.string(o, name, path);
      case 'integer':
        return this.integer(o, name, path);
      case 'number':
        return this.number(o, name, path);
      case 'boolean':
        return this.primitive('boolean');
      case 'null':
        return this.primitive('null');
      case undefined:
        if (o.properties) return this.object(o, name, path);
        if (o.items) return this.array(o, name, path);
        return this.primitive('value');
      default:
        this.fail(`${path}.type`, `unknown type ${JSON.stringify(type)}`);
    }
  }

  private jsonLiteral(v: unknown): string {
    return `${gbnfLiteral(JSON.stringify(v))} ${this.primitive('space')}`;
  }

  private ref(ref: string, path: string): string {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    if (!m) this.fail(`${path}.$ref`, `only local references (#/$defs/Name) are supported, got ${JSON.stringify(ref)}`);
    const have = this.refs.get(ref);
    if (have) return have;
    const defs = (this.root as Record<string, unknown>)[m[1]!] as Record<string, unknown> | undefined;
    const target = defs?.[m[2]!];
    if (target === undefined) this.fail(`${path}.$ref`, `${ref} is not defined`);
    // Name the rule before visiting, so a recursive schema refers to itself.
    const name = this.rule(`ref-${m[2]}`, '""');
    this.refs.set(ref, name);
    this.rules.set(name, this.visit(target, `${name}-body`, `.${m[1]}.${m[2]}`));
    return name;
  }

  private object(o: Record<string, unknown>, name: string, path: string): string {
    const props = (o.properties ?? {}) as Record<string, unknown>;
    if (typeof props !== 'object' || Array.isArray(props)) this.fail(`${path}.properties`, 'expected an object');
    const required = new Set((o.required ?? []) as string[]);
    for (const r of required) {
      if (!(r in props)) this.fail(`${path}.required`, `"${r}" is required but not in properties`);
    }
    const kv = (key: string) => {
      const value = this.visit(props[key], `${name}-${key}`, `${path}.properties.${key}`);
      return this.rule(`${name}-${key}-kv`, `${gbnfLiteral(JSON.stringify(key))} space ":" space ${value}`);
    };
    const keys = Object.keys(props);
    const req = keys.filter((k) => required.has(k)).map(kv);
    const opt = keys.filter((k) => !required.has(k)).map(kv);
    const extra = o.additionalProperties;
    if (extra !== undefined && extra !== false) {
      const value =
        extra === true
          ? this.primitive('value')
          : this.visit(extra, `${name}-additional`, `${path}.additionalProperties`);
      opt.push(this.rule(`${name}-additional-kv`, `${this.primitive('string')} ":" space ${value}`));
    } else if (!keys.length && extra === undefined) {
      return this.primitive('object'); // {type: 'object'}: any object
    }
    this.primitive('space');
    const last = extra !== undefined && extra !== false ? opt.length - 1 : -1; // additional properties repeat
    const more = (i: number) => (i === last ? `("," space ${opt[i]})*` : `("," space ${opt[i]})?`);
    let body: string;
    if (req.length) {
      body = [req.join(' "," space '), ...opt.map((_, i) => more(i))].join(' ');
    } else if (opt.length) {
      // The first optional property written has no comma before it.
      const starts = opt.map((p, i) => [p, ...opt.slice(i + 1).map((_, j) => more(i + 1 + j))].join(' '));
      if (last >= 0) starts[last] = `${opt[last]} ("," space ${opt[last]})*`;
      body = `( ${starts.join(' | ')} )?`;
    } else {
      body = '';
    }
    return this.rule(name, `"{" space ${body} "}" space`.replace(/ {2,}/g, ' '));
  }

  private array(o: Record<string, unknown>, name: string, path: string): string {
    const min = this.count(o.minItems, `${path}.minItems`) ?? 0;
    const max = this.count(o.maxItems, `${path}.maxItems`);
    this.primitive('space');
    if (Array.isArray(o.prefixItems)) {
      const items = o.prefixItems.map((s, i) => this.visit(s, `${name}-${i}`, `${path}.prefixItems[${i}]`));
      return this.rule(name, `"[" space ${items.join(' "," space ')} "]" space`);
    }
    const item = this.visit(o.items ?? true, `${name}-item`, `${path}.items`);
    if (max !== null && max < min) this.fail(`${path}.maxItems`, 'is smaller than minItems');
    if (max === 0) return this.rule(name, '"[" space "]" space');
    const rest = `("," space ${item})${repeat(Math.max(0, min - 1), max === null ? null : max - 1)}`;
    const items = `${item} ${rest}`;
    return this.rule(name, `"[" space ${min > 0 ? items : `( ${items} )?`} "]" space`);
  }

  private string(o: Record<string, unknown>, name: string, path: string): string {
    const min = this.count(o.minLength, `${path}.minLength`) ?? 0;
    const max = this.count(o.maxLength, `${path}.maxLength`);
    const format = o.format;
    if (format !== undefined) {
      const known = FORMATS[format as string];
      if (!known) {
        this.fail(
          `${path}.format`,
          `format ${JSON.stringify(format)} is not supported (supported: ${Object.keys(FORMATS).join(', ')})`,
        );
      }
      return this.rule(`${name}-${format}`, `"\\"" ${known} "\\"" ${this.primitive('space')}`);
    }
    if (!min && max === null) return this.primitive('string');
    this.primitive('string');
    return this.rule(name, `"\\"" char${repeat(min, max)} "\\"" space`);
  }

  private integer(o: Record<string, unknown>, name: string, path: string): string {
    const num = (k: string) => (typeof o[k] === 'number' ? (o[k] as number) : undefined);
    let lo = num('minimum');
    let hi = num('maximum');
    if (num('exclusiveMinimum') !== undefined) lo = Math.floor(num('exclusiveMinimum')!) + 1;
    if (num('exclusiveMaximum') !== undefined) hi = Math.ceil(num('exclusiveMaximum')!) - 1;
    if (lo !== undefined) lo = Math.ceil(lo);
    if (hi !== undefined) hi = Math.floor(hi);
    if (lo === undefined && hi === undefined) return this.primitive('integer');
    if (lo !== undefined && hi !== undefined && lo > hi) this.fail(path, 'minimum is above maximum');
    if (hi !== undefined && hi < 0 && lo === undefined) {
      this.fail(`${path}.maximum`, 'a negative maximum needs a minimum too');
    }
    const space = this.primitive('space');
    const parts: string[] = [];
    if (lo === undefined || lo < 0) {
      const negHi = lo === undefined ? null : -lo; // -x for x in [max(1, -hi), -lo]
      parts.push(`"-" ${uintRange(Math.max(1, hi !== undefined && hi < 0 ? -hi : 1), negHi)}`);
    }
    if (hi === undefined || hi >= 0) parts.push(uintRange(Math.max(0, lo ?? 0), hi ?? null));
    return this.rule(name, `(${parts.map((p) => `(${p})`).join(' | ')}) ${space}`);
  }

  /**
   * Numbers between integer bounds (the common case, a rating from 0 to 5): each whole part in the range with any
   * fraction, the upper bound itself with only zeros after the point, the exclusive lower one with some nonzero
   * digit. No exponent where a bound is set, but for the open range from 0 (1e-5 and 1e5 are both at least 0).
   * Bounds that are not integers, or are negative, are refused.
   */
  private number(o: Record<string, unknown>, name: string, path: string): string {
    const bound = (k: string) => {
      const v = o[k];
      if (v === undefined) return undefined;
      if (!Number.isInteger(v) || (v as number) < 0 || (k === 'exclusiveMaximum' && v === 0)) {
        this.fail(
          `${path}.${k}`,
          'number bounds are supported as integers from 0 up; use an integer range, or check the value',
        );
      }
      return v as number;
    };
    const [min, xmin, max, xmax] = ['minimum', 'exclusiveMinimum', 'maximum', 'exclusiveMaximum'].map(bound);
    if (min === undefined && xmin === undefined && max === undefined && xmax === undefined) {
      return this.primitive('number');
    }
    this.primitive('number');
    const fraction = '("." [0-9]{1,16})?';
    if (max === undefined && xmax === undefined && xmin === undefined && min === 0) {
      return this.rule(name, `integral-part ${fraction} ([eE] [-+]? [0-9]{1,4})? space`);
    }
    // The whole parts that take any fraction: from lo to hi (null: no end).
    const lo = Math.max(min ?? 0, xmin === undefined ? 0 : xmin + 1);
    const ends = [xmax, max].filter((v) => v !== undefined).map((v) => v - 1);
    const hi = ends.length ? Math.min(...ends) : null;
    const top = max !== undefined && (xmax === undefined || max < xmax) ? max : null; // reached with a zero fraction
    const parts: string[] = [];
    if (min === undefined && xmin === undefined) parts.push(`"-" integral-part ${fraction}`);
    if (xmin !== undefined && xmin >= (min ?? 0) && (top === null || xmin < top) && (hi === null || xmin < hi + 1)) {
      parts.push(`"${xmin}" "." [0-9]{0,15} [1-9]`);
    }
    if (hi === null || lo <= hi) parts.push(`(${uintRange(lo, hi)}) ${fraction}`);
    if (top !== null && top >= lo) parts.push(`"${top}" ("." "0"{1,16})?`);
    if (!parts.length) this.fail(path, 'no number is within these bounds');
    return this.rule(name, `(${parts.map((p) => `(${p})`).join(' | ')}) space`);
  }

  private count(v: unknown, path: string): number | null {
    if (v === undefined) return null;
    if (!Number.isInteger(v) || (v as number) < 0) this.fail(path, 'expected a non-negative integer');
    return v as number;
  }
}

const DATE = '[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])';
const TIME =
  '([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] [0-9]{2} ":" [0-9]{2})';
const FORMATS: Record<string, string> = {
  date: DATE,
  time: TIME,
  'date-time': `${DATE} "T" ${TIME}`,
  uuid: '[0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12}',
};

/** GBNF repetition suffix for min..max (max null: unbounded). */
function repeat(min: number, max: number | null): string {
  if (max === null) return min === 0 ? '*' : min === 1 ? '+' : `{${min},}`;
  if (min === 0 && max === 1) return '?';
  return `{${min},${max}}`;
}

/** Decimal numbers without leading zeros from lo to hi (hi null: no limit), as a GBNF expression. */
export function uintRange(lo: number, hi: number | null): string {
  const alts: string[] = [];
  const loLen = String(lo).length;
  if (hi === null) {
    // Same length as lo and at least lo, or any longer number.
    alts.push(sameLength(String(lo), '9'.repeat(loLen)));
    alts.push(`[1-9] [0-9]{${loLen},15}`);
    return alts.join(' | ');
  }
  const hiLen = String(hi).length;
  for (let len = loLen; len <= hiLen; len++) {
    const a = len === loLen ? String(lo) : `1${'0'.repeat(len - 1)}`;
    const b = len === hiLen ? String(hi) : '9'.repeat(len);
    alts.push(sameLength(a, b));
  }
  return alts.join(' | ');
}

// Numbers of one length from a to b (digit strings), digit by digit.
function sameLength(a: string, b: string): string {
  if (a.length === 1) return a === b ? `"${a}"` : `[${a}-${b}]`;
  const [a0, b0] = [Number(a[0]), Number(b[0])];
  const tailA = a.slice(1);
  const tailB = b.slice(1);
  if (a0 === b0) return `"${a0}" (${sameLength(tailA, tailB)})`;
  const any = (n: number) => `[0-9]{${n}}`;
  const parts = [`"${a0}" (${sameLength(tailA, '9'.repeat(tailA.length))})`];
  if (b0 - a0 > 1) parts.push(`[${a0 + 1}-${b0 - 1}] ${any(tailA.length)}`);
  parts.push(`"${b0}" (${sameLength('0'.repeat(tailB.length), tailB)})`);
  return parts.join(' | ');
}

/** The grammar for JSON that validates against `schema`; InvalidRequestError (naming `param`) when it cannot be
 * enforced. */
export function schemaGrammar(schema: unknown, param: string): string {
  const g = new GrammarBuilder(param);
  return g.text(g.schema(schema, 'value-root'));
}

/** The grammar for any JSON object (response_format json_object). */
export function jsonObjectGrammar(): string {
  const g = new GrammarBuilder('response_format');
  return g.text(g.primitive('object'));
}
