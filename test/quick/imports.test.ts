// The shape of the code, checked: the layers a newcomer sees in the folder names, and nothing that blurs them.
//   types, contract, errors  ←  core  ←  backends  ←  api (router, selection, shared tabs)  ←  entries  ←  surfaces
// Each layer imports only the layers before it (and itself); a backend imports no other backend; the adapters over
// the public API (openai/, ai-sdk/) only its types and errors. No import circles, between files or between folders
// (a circle makes load order matter and hides which layer a file belongs to). Comments name files that exist.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');
const FOLDERS = ['src', 'workers', 'test', 'e2e', 'bench', 'scripts'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') ? [] : sources(path);
    return /\.(ts|mts|mjs)$/.test(e.name) ? [path] : [];
  });
}

type Graph = Map<string, string[]>;

/** Each file's relative imports (static, dynamic and re-exports), as paths from the repository's root. */
function importGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of FOLDERS.flatMap(sources)) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const specs = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
    graph.set(
      file,
      specs.map((s) => relative(ROOT, resolve(ROOT, dirname(file), s))),
    );
  }
  return graph;
}

/** The circles of the graph: its strongly connected components of more than one node, or a node importing itself. */
function circles(graph: Graph): string[][] {
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

/** The graph between folders. The files at src/'s top are units of their own: the base modules (contract, errors,
 * types) and the entry points (index, node, create-engine…) live there, two layers by design. */
function folderGraph(graph: Graph): Graph {
  const unit = (f: string) => (dirname(f) === 'src' ? f : dirname(f));
  const folders: Graph = new Map();
  for (const [file, deps] of graph) {
    const from = unit(file);
    const to = deps.map(unit).filter((d) => d !== from);
    folders.set(from, [...new Set([...(folders.get(from) ?? []), ...to])]);
  }
  return folders;
}

const BASE = /^src\/(types\.ts|types\/|contract\.ts|errors\.ts)/;
const CORE = /^src\/core\//;
const BACKENDS = /^src\/backends\//;
const API = /^src\/api\//;
const ENTRIES = /^src\/(?!types\.ts|contract\.ts|errors\.ts)[^/]+\.ts$/;
const ADAPTERS = /^src\/(openai|ai-sdk)\//;
const UI = /^src\/(ui|widget|app|prompt-api)\//;

/** Each layer: its files, and what they may import. The first rule a file matches is its layer. */
const LAYERS: Array<{ layer: string; files: RegExp; may: RegExp[] }> = [
  { layer: 'types', files: /^src\/(types\.ts|types\/)/, may: [/^src\/(types\.ts|types\/)/] },
  { layer: 'contract', files: /^src\/contract\.ts$/, may: [/^src\/types\.ts$/] },
  { layer: 'errors', files: /^src\/errors\.ts$/, may: [] },
  { layer: 'core', files: CORE, may: [BASE, CORE] },
  // The binding is the bottom of the llama.cpp engine: nothing of the engine above it.
  {
    layer: 'binding',
    files: /^src\/backends\/llamacpp\/binding\//,
    may: [BASE, CORE, /^src\/backends\/llamacpp\/binding\//],
  },
  { layer: 'backends', files: BACKENDS, may: [BASE, CORE, BACKENDS] },
  { layer: 'api', files: API, may: [BASE, CORE, BACKENDS, API] },
  { layer: 'entries', files: ENTRIES, may: [BASE, CORE, BACKENDS, API, ENTRIES, ADAPTERS] },
  { layer: 'adapters', files: ADAPTERS, may: [/^src\/(types\.ts|errors\.ts)$/, /^src\/(types\/)/, ADAPTERS] },
  { layer: 'surfaces', files: UI, may: [BASE, CORE, /^src\/(index|create-engine)\.ts$/, UI] },
  { layer: 'workers', files: /^workers\//, may: [BASE, CORE, BACKENDS] },
];

/** The imports that break a layer's rule, and those from one backend's folder into another's. */
function layerBreaks(graph: Graph): string[] {
  const backendOf = (f: string) => /^src\/backends\/([^/]+)\//.exec(f)?.[1] ?? null;
  return [...graph].flatMap(([file, deps]) => {
    const rule = LAYERS.find((l) => l.files.test(file));
    if (!rule) return [];
    return deps
      .filter((dep) => {
        if (!dep.startsWith('src/')) return false; // packages, wasm/ and build output are not layers
        if (!rule.may.some((m) => m.test(dep))) return true;
        const [a, b] = [backendOf(file), backendOf(dep)];
        return a !== null && b !== null && a !== b;
      })
      .map((dep) => `${file} (${rule.layer}) → ${dep}`);
  });
}

/** The files with comments worth checking: sources, and wasm/'s and test/native's C++, JS and CMake files. */
function commented(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') ? [] : commented(path);
    return /\.(ts|mts|mjs|js|cpp)$|^CMakeLists\.txt$|\.cmake$/.test(e.name) ? [path] : [];
  });
}

/** A file's comments: // and /* *\/ in TS, JS and C++, # in CMake. */
function comments(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return text.match(/(^|\/)CMakeLists\.txt$|\.cmake$/.test(file) ? /#.*/g : /\/\/.*|\/\*[\s\S]*?\*\//g) ?? [];
}

/**
 * Whether a path from the repository's root exists; a llama.cpp patch may be named by its number (wasm/patches/0020).
 */
function found(p: string): boolean {
  const patches = readdirSync(join(ROOT, 'wasm', 'patches'));
  return (
    existsSync(join(ROOT, p)) || (/^wasm\/patches\/\d{4}$/.test(p) && patches.some((f) => f.startsWith(p.slice(-4))))
  );
}

/**
 * Paths a comment names that do not exist: a name ending in .ts, .mts or .mjs, after any folders, that matches no
 * source file of the repository (the file itself, or one whose path ends with it; one starting ./ or ../ is relative
 * to the commented file), and a file or folder from the repository's root (src/…, wasm/…; a path in llama.cpp's tree
 * is written after "llama.cpp's").
 */
function staleMentions(files: string[]): string[] {
  const all = [...FOLDERS, 'wasm', '.ci']
    .flatMap(sources)
    .concat(readdirSync(ROOT).filter((f) => /\.(ts|mts|mjs)$/.test(f))); // the config files at the root
  const exists = (file: string, m: string) =>
    /^\.{1,2}\//.test(m)
      ? all.includes(relative(ROOT, resolve(ROOT, dirname(file), m)))
      : all.some((f) => f === m || f.endsWith(`/${m}`));
  return files.flatMap((file) => {
    const text = comments(file).join('\n');
    const named = [...text.matchAll(/(?<![\w./@-])((?:[\w.-]+\/)*[\w-]+\.(?:ts|mts|mjs))(?![\w/-])/g)]
      .map((m) => m[1]!)
      .filter((m) => !exists(file, m));
    const rooted = [
      ...text.matchAll(/(?<!llama\.cpp's |[\w/.-])((?:src|workers|test|e2e|scripts|bench|wasm|docs)\/[\w/.-]*\w)/g),
    ]
      .map((m) => m[1]!)
      .filter((p) => !found(p));
    return [...new Set([...named, ...rooted])].map((m) => `${file}: ${m}`);
  });
}

/** File names used by more than one file (a file in src/types/ does not count: it holds the public types of the code
 * of its name), as 'name: paths'. */
function sharedNames(files: string[]): string[] {
  const byName = new Map<string, string[]>();
  for (const f of files.filter((f) => !f.startsWith('src/types/'))) {
    const name = f.slice(f.lastIndexOf('/') + 1);
    byName.set(name, [...(byName.get(name) ?? []), f]);
  }
  return [...byName].filter(([, paths]) => paths.length > 1).map(([name, paths]) => `${name}: ${paths.join(', ')}`);
}

const graph = importGraph();

describe('imports', () => {
  it('finds the files and their imports (else the checks below pass on nothing)', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('src/backends/llamacpp/llama-engine.ts')).toContain('src/contract.ts');
    expect(LAYERS.find((l) => l.files.test('src/create-engine.ts'))?.layer).toBe('entries');
  });

  it('form no circle, between files or, in src/ and workers/, between folders', () => {
    expect(circles(graph)).toEqual([]);
    const product = new Map([...graph].filter(([file]) => /^(src|workers)\//.test(file)));
    expect(circles(folderGraph(product))).toEqual([]);
  });

  it('go downward: types/contract ← core ← backends ← api ← entries ← surfaces; no backend imports another', () => {
    expect(layerBreaks(graph)).toEqual([]);
  });

  it('the test seams (backends/llamacpp/test-hooks.ts) are imported by tests and benchmarks only: no bundle ships them', () => {
    const seams = 'src/backends/llamacpp/test-hooks.ts';
    const users = [...graph].filter(([, deps]) => deps.includes(seams)).map(([file]) => file);
    expect(users.length).toBeGreaterThan(0);
    expect(users.filter((f) => !/^(test|bench)\//.test(f))).toEqual([]);
  });

  it("name each idea once under src/: no two files share a name, but a public type's file in src/types/", () => {
    expect(sharedNames([...graph.keys()].filter((f) => f.startsWith('src/')))).toEqual([]);
    expect(sharedNames(['src/a/store.ts', 'src/b/store.ts', 'src/types/chat.ts', 'src/core/chat.ts'])).toEqual([
      'store.ts: src/a/store.ts, src/b/store.ts',
    ]);
  });

  it('every file of src/ and workers/ belongs to a layer', () => {
    expect([...graph.keys()].filter((f) => /^(src|workers)\//.test(f) && !LAYERS.some((l) => l.files.test(f)))).toEqual(
      [],
    );
  });

  it('would report a circle and a broken layer', () => {
    const looped = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(circles(looped)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
    const folders = new Map([
      ['src/x/a.ts', ['src/y/b.ts']],
      ['src/y/b.ts', ['src/y/c.ts']],
      ['src/y/c.ts', ['src/x/d.ts']],
      ['src/x/d.ts', []],
    ]);
    expect(circles(folders)).toEqual([]);
    expect(circles(folderGraph(folders))).toEqual([['src/x', 'src/y']]);
    const broken = new Map([
      ['src/core/a.ts', ['src/backends/llamacpp/llama-engine.ts']],
      ['src/backends/wllama/w.ts', ['src/backends/server/server.ts']],
      ['src/ui/v.ts', ['src/backends/llamacpp/llama-engine.ts']],
      ['src/openai/f.ts', ['src/core/bytes.ts']],
      ['src/api/r.ts', ['src/backends/supports.ts']],
    ]);
    expect(layerBreaks(broken)).toEqual([
      'src/core/a.ts (core) → src/backends/llamacpp/llama-engine.ts',
      'src/backends/wllama/w.ts (backends) → src/backends/server/server.ts',
      'src/ui/v.ts (surfaces) → src/backends/llamacpp/llama-engine.ts',
      'src/openai/f.ts (adapters) → src/core/bytes.ts',
    ]);
  });

  it('every function wasm/hearth.cpp exports is declared in the binding and called from src/, and nothing else is', () => {
    const exported = [
      ...readFileSync(join(ROOT, 'wasm/hearth.cpp'), 'utf8').matchAll(
        /EMSCRIPTEN_KEEPALIVE[^(;]*?\b(hearth_\w+)\s*\(/g,
      ),
    ].map((m) => m[1]!);
    const moduleFile = 'src/backends/llamacpp/binding/module.ts';
    const declared = [...readFileSync(join(ROOT, moduleFile), 'utf8').matchAll(/^\s+_(hearth_\w+)\(/gm)].map(
      (m) => m[1]!,
    );
    const code = [...graph.keys()]
      .filter((f) => f.startsWith('src/') && f !== moduleFile)
      .map((f) => readFileSync(join(ROOT, f), 'utf8'))
      .join('\n');
    expect(exported.length).toBeGreaterThan(50);
    expect(declared.sort()).toEqual([...exported].sort());
    expect(exported.filter((name) => !code.includes(`_${name}(`))).toEqual([]);
  });

  it('every path under src/ or workers/ that a page, a test, a script, the README or a docs page names exists', () => {
    const docs = readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`);
    const named = ['README.md', ...docs, 'index.html', 'e2e/harness.html', 'e2e/widget-host.html', 'bench/page.html']
      .concat(FOLDERS.flatMap(sources).filter((f) => f !== 'test/quick/imports.test.ts')) // its own are made-up examples
      .flatMap((file) => {
        const text = readFileSync(join(ROOT, file), 'utf8');
        return [...text.matchAll(/(?<![\w-])(?:\.{0,2}\/)?((?:src|workers)\/[\w/.-]+\.(?:ts|css|html))/g)].map((m) => [
          file,
          m[1]!,
        ]);
      });
    expect(named.length).toBeGreaterThan(50);
    expect(named.some(([file]) => file!.startsWith('docs/'))).toBe(true); // the docs are read, not skipped
    expect(
      named.filter(([, path]) => !existsSync(join(ROOT, path!))).map(([file, path]) => `${file}: ${path}`),
    ).toEqual([]);
  });

  it("the README's and the docs pages' links, repository paths and npm scripts exist", () => {
    const pages = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs')).flatMap((f) => (f.endsWith('.md') ? [`docs/${f}`] : [])),
    ];
    const scripts = Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts);
    const missing = pages.flatMap((page) => {
      const text = readFileSync(join(ROOT, page), 'utf8');
      // Markdown links to files, from the page's folder (not to the web, not to an anchor of the same page).
      const links = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
        .map((m) => m[1]!)
        .filter((l) => !/^[a-z]+:/.test(l))
        .map((l) => relative(ROOT, resolve(ROOT, dirname(page), l)));
      // Paths in the text, from the repository's root (a link's ../ taken off).
      const paths = [
        ...text.matchAll(
          /(?<![\w/.-])(?:\.\.\/)?((?:src|workers|test|e2e|scripts|bench|wasm|docs|tools|\.ci)\/[\w/.-]*\w)/g,
        ),
      ].map((m) => m[1]!);
      const npm = [...text.matchAll(/\bnpm run ([\w:-]+)/g)].map((m) => m[1]!).filter((n) => !scripts.includes(n));
      return [
        ...[...links, ...paths].filter((p) => !found(p)).map((p) => `${page}: ${p}`),
        ...npm.map((n) => `${page}: npm run ${n}`),
      ];
    });
    expect(pages.length).toBeGreaterThan(5);
    expect(missing).toEqual([]);
  });

  it('comments name files that exist (a moved or deleted file leaves no pointer behind)', () => {
    const files = [...FOLDERS, 'wasm', 'test/native'].flatMap(commented);
    const roots = readdirSync(ROOT).filter((f) => /\.config\.ts$/.test(f));
    expect(files).toContain('wasm/CMakeLists.txt');
    expect(files).toContain('wasm/hearth.cpp');
    expect(staleMentions([...new Set([...files, ...roots])])).toEqual([]);
  });
});
