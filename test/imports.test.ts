// The shape of the code, checked: no import circles anywhere (a circle makes load order matter and hides which layer
// a file belongs to), and the layers import downward only — the public types and the contract import nothing else,
// the binding nothing above it, the engine nothing of the page (workers, shared tabs, UI, other backends).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const FOLDERS = ['src', 'workers', 'test', 'e2e', 'bench', 'scripts'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') ? [] : sources(path);
    return /\.(ts|mts|mjs)$/.test(e.name) ? [path] : [];
  });
}

/** Each file's relative imports (static, dynamic and re-exports), as paths from the repository's root. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of FOLDERS.flatMap(sources)) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const specs = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
    graph.set(file, specs.map((s) => relative(ROOT, resolve(ROOT, dirname(file), s))));
  }
  return graph;
}

/** The circles of the graph: its strongly connected components of more than one file, or a file importing itself. */
function circles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = stack.splice(stack.indexOf(v));
    if (component.length > 1 || graph.get(v)!.includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const graph = importGraph();
const importsOf = (prefix: string) => [...graph].filter(([file]) => file.startsWith(prefix)).flatMap(([file, deps]) => deps.map((d) => `${file} → ${d}`));

describe('imports', () => {
  it('finds the files and their imports (else the checks below pass on nothing)', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('src/backends/llamacpp/engine.ts')).toContain('src/contract.ts');
  });

  it('form no circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('go downward: types and contract import nothing else; the binding nothing above it; the engine nothing of the page', () => {
    const broken = [
      ...importsOf('src/types').filter((e) => !/→ src\/types\//.test(e)),
      ...importsOf('src/contract.ts').filter((e) => !e.endsWith('→ src/types.ts')),
      ...importsOf('src/engine/llama/').filter((e) => !/→ src\/(types|contract|errors)\.ts$|→ src\/engine\/llama\//.test(e)),
      ...importsOf('src/engine/').filter((e) => /→ src\/(backends|shared|widget|app|ui)\//.test(e)),
    ];
    expect(broken).toEqual([]);
  });

  it('would report a circle', () => {
    const looped = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]]);
    expect(circles(looped)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});
