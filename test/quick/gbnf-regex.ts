// For tests: a grammar without recursion, as a JavaScript regular expression that matches what llama.cpp's grammar
// would (the rules inlined; literals, classes, groups, alternatives and repetitions are the same in both). The
// grammars are run by llama.cpp itself in chat-features.test.ts; this checks what they mean across many inputs.

/** GBNF's escapes in a literal or a class (\xNN, \uNNNN, \UNNNNNNNN, \n, \t, \r, \\, \", \], \-) as code points. */
function readEscape(text: string, at: number): [codePoint: number, next: number] {
  if (text[at] !== '\\') return [text.codePointAt(at)!, at + String.fromCodePoint(text.codePointAt(at)!).length];
  const c = text[at + 1]!;
  const hex = { x: 2, u: 4, U: 8 }[c];
  if (hex) return [Number.parseInt(text.slice(at + 2, at + 2 + hex), 16), at + 2 + hex];
  return [{ n: 10, t: 9, r: 13 }[c] ?? c.codePointAt(0)!, at + 2];
}

const inClass = (cp: number) => `\\u{${cp.toString(16)}}`;

/** The regular expression (with the u flag) for `rule` of `grammar`. */
export function gbnfRegex(grammar: string, rule = 'root'): RegExp {
  const rules = new Map<string, string>();
  for (const line of grammar.split('\n')) {
    const m = /^([a-zA-Z0-9-]+) ::= (.*)$/.exec(line);
    if (m) rules.set(m[1]!, m[2]!);
  }
  const expand = (name: string, depth: number): string => {
    if (depth > 30) throw new Error(`rule ${name} recurses`);
    const body = rules.get(name);
    if (body === undefined) throw new Error(`no rule ${name}`);
    let out = '';
    for (let i = 0; i < body.length; ) {
      const ch = body[i]!;
      if (ch === ' ') i++;
      else if (ch === '"') {
        let lit = '';
        for (i++; body[i] !== '"'; ) {
          const [cp, next] = readEscape(body, i);
          lit += inClass(cp);
          i = next;
        }
        out += `(?:${lit})`;
        i++;
      } else if (ch === '[') {
        let cls = '[';
        i++;
        if (body[i] === '^') {
          cls += '^';
          i++;
        }
        while (body[i] !== ']') {
          if (body[i] === '-') {
            cls += '-';
            i++;
            continue;
          }
          const [cp, next] = readEscape(body, i);
          cls += inClass(cp);
          i = next;
        }
        out += `${cls}]`;
        i++;
      } else if (ch === '.') {
        out += '[^]';
        i++;
      } else if (/[a-zA-Z]/.test(ch)) {
        const name2 = /^[a-zA-Z0-9-]+/.exec(body.slice(i))![0];
        out += `(?:${expand(name2, depth + 1)})`;
        i += name2.length;
      } else {
        // ( ) | ? * + and {m,n}
        const m = /^\{\d*(,\d*)?\}/.exec(body.slice(i));
        out += m ? m[0] : ch;
        i += m ? m[0].length : 1;
      }
    }
    return out;
  };
  return new RegExp(`^(?:${expand(rule, 0)})$`, 'u');
}
