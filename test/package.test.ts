// The npm package (npm run build:package): what the tarball holds, a manifest npm publishes cleanly with nothing run at
// install, plain Node (`node`, not tsx) answering from a project that installed the tarball, and its command line (`npx
// hearth prompt-state`). The browser installs (a Vite app, a static page with the widget folder) are in
// e2e/package.spec.ts; the templates on the package's built renderer in templates-package.test.ts.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ASSET_FILES } from '../src/core/assets.ts';
import { defaultWasmDir } from '../src/node.ts';
import { modelPath, SYSTEM } from './helpers.ts';
import { freshProject, PACKAGE_NAME, stageDir, tarball } from './package-project.ts';

// The CPU builds (4 × 4.4 MB: plain and relaxed SIMD, threaded and not), the GPU build (6.2 MB) and wllama's (8.8 MB)
// compress to about 9.5 MB; the rest is JavaScript (9.9 MB in all, 2026-11-27).
const MAX_TARBALL_BYTES = 11_000_000;
const { version, devDependencies } = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8'),
) as { version: string; devDependencies: Record<string, string> };

const files = () =>
  execFileSync('tar', ['tzf', tarball()], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((f) => f.replace(/^package\//, ''));
const manifest = () =>
  JSON.parse(execFileSync('tar', ['xOzf', tarball(), 'package/package.json'], { encoding: 'utf8' }));

describe('the npm package', () => {
  it(`holds the library with its types, the widget folder with the engine's files and the docs pages, nothing else, under ${MAX_TARBALL_BYTES / 1e6} MB`, () => {
    const list = files();
    const placed =
      /^(package\.json|README\.md|LICENSE|CHANGELOG\.md|docs\/[\w-]+\.md|bin\/hearth\.js|lib\/[\w-]+\.js|lib\/types\/[\w/.-]+\.d\.ts|widget\/(chunks\/)?[\w.-]+\.(js|wasm|json))$/;
    expect(list.filter((f) => !placed.test(f))).toEqual([]);
    expect(list).toEqual(
      expect.arrayContaining([
        'bin/hearth.js',
        'docs/api.md',
        'lib/cli.js',
        'lib/index.js',
        'lib/node.js',
        'lib/widget.js',
        'lib/jinja.js',
        'lib/packaged-assets.js',
        'lib/types/index.d.ts',
        'lib/types/node.d.ts',
        'lib/types/widget/hearth-chat.d.ts',
        'lib/openai.js',
        'lib/ai-sdk.js',
        'lib/types/openai.d.ts',
        'lib/types/ai-sdk.d.ts',
        'widget/hearth-chat.js',
        'widget/engine.worker.js',
        'widget/hearth-st.js',
        'widget/hearth-st.wasm',
        'widget/hearth-st-relaxed.wasm',
        'widget/hearth-mt.js',
        'widget/hearth-mt.wasm',
        'widget/hearth-mt-relaxed.wasm',
        'widget/hearth-webgpu.js',
        'widget/hearth-webgpu.wasm',
        'widget/wllama.wasm',
        'widget/package.json',
      ]),
    );
    expect(
      list.filter((f) => /\.(gguf|map|cpp|patch)$/.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts'))),
    ).toEqual([]);
    // build-package.mjs (plain Node) keeps its own list of the engine's files: it must name each one the engine asks
    // for.
    const packaged = execFileSync('tar', ['xOzf', tarball(), 'package/lib/packaged-assets.js'], { encoding: 'utf8' });
    expect(
      [...packaged.matchAll(/'([\w.-]+)': new URL\('\.\.\/widget\/\1', import\.meta\.url\)/g)].map((m) => m[1]),
    ).toEqual([...ASSET_FILES]);
    expect(statSync(tarball()).size).toBeLessThan(MAX_TARBALL_BYTES);
  });

  it('has a manifest with no install scripts, the patched renderer built in, and entries that exist', () => {
    const pkg = manifest();
    expect(pkg).toMatchObject({ name: PACKAGE_NAME, version, type: 'module', engines: { node: expect.any(String) } });
    expect(pkg.scripts).toBeUndefined();
    expect(pkg.devDependencies).toBeUndefined();
    expect(Object.keys(pkg.dependencies)).not.toContain('@huggingface/jinja');
    const list = files();
    const targets = Object.values(pkg.exports as Record<string, string | Record<string, string>>)
      .flatMap((t) => (typeof t === 'string' ? [t] : Object.values(t)))
      .map((t) => t.replace(/^\.\//, ''));
    expect(targets.filter((t) => !list.includes(t))).toEqual([]);
    expect(list).toContain(pkg.bin.hearth);
  });

  it('publishes cleanly (npm publish --dry-run: no warnings)', () => {
    tarball();
    const run = spawnSync('npm', ['publish', '--dry-run', '--ignore-scripts'], { cwd: stageDir, encoding: 'utf8' });
    expect(run.status).toBe(0);
    // Two warnings are about the machine, not the package: its npm config names a setting npm no longer knows, and
    // nobody is logged in to the registry here.
    const machine = /Unknown (user|env) config "nodedir"|requires you to be logged in/;
    const warnings = run.stderr.split('\n').filter((l) => /warn/i.test(l) && !machine.test(l));
    expect(warnings).toEqual([]);
    expect(run.stderr).toContain(`${PACKAGE_NAME}@${version}`);
  });

  it('answers in plain Node from a project that installed the tarball', () => {
    const dir = freshProject('node', {
      'answer.mjs': `import { createNodeEngine } from '${PACKAGE_NAME}/node';
const engine = await createNodeEngine({ modelsDir: null });
await engine.load({ path: process.argv[2] });
const r = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, seed: 1 });
const info = await engine.info();
await engine.unload();
console.log(JSON.stringify({ content: r.choices[0].message.content, tokens: r.usage.completion_tokens, version: info.version, llamaBuild: info.llamaBuild }));
`,
    });
    const out = JSON.parse(
      execFileSync('node', ['answer.mjs', modelPath('qwen2-tiny')], { cwd: dir, encoding: 'utf8' }),
    );
    const buildInfo = JSON.parse(readFileSync(join(defaultWasmDir, 'build-info.json'), 'utf8'));
    expect(out).toMatchObject({ tokens: 8, version, llamaBuild: buildInfo.llama });
    expect(out.content.length).toBeGreaterThan(0);
  });

  it('writes a prompt state with `npx hearth prompt-state` in a project that installed the tarball, which the engine then uses', () => {
    const dir = freshProject('cli', {
      'system.txt': SYSTEM,
      'answer.mjs': `import { readFileSync } from 'node:fs';
import { createNodeEngine } from '${PACKAGE_NAME}/node';
const engine = await createNodeEngine({ modelsDir: null, cache: { persistent: false } });
const info = await engine.load({ path: process.argv[2] }, { promptState: new Blob([readFileSync('state.bin')]) });
const r = await engine.chat.completions.create({ messages: [{ role: 'system', content: readFileSync('system.txt', 'utf8') },
  { role: 'user', content: 'Hello' }], max_tokens: 4 });
await engine.unload();
console.log(JSON.stringify({ shipped: info.promptState, source: r.timings.cache_source, cached: r.usage.prompt_tokens_details.cached_tokens }));
`,
    });
    const printed = execFileSync(
      'npx',
      [
        '--no-install',
        'hearth',
        'prompt-state',
        '--model',
        modelPath('qwen2-hello'),
        '--system',
        'system.txt',
        '-o',
        'state.bin',
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    expect(printed).toMatch(/state\.bin: .* the state of \d+ tokens/);
    expect(readFileSync(join(dir, 'state.bin')).subarray(0, 8).toString()).toBe('HEARTHPS');
    const out = JSON.parse(
      execFileSync('node', ['answer.mjs', modelPath('qwen2-hello')], { cwd: dir, encoding: 'utf8' }),
    );
    expect(out.source).toBe('prompt-state');
    expect(out.cached).toBe(out.shipped.tokens);
  });

  it('answers the openai SDK and the AI SDK through hearth-llm/openai and hearth-llm/ai-sdk in a project that installed the tarball', () => {
    const dir = freshProject(
      'clients',
      {
        'answer.mjs': `import OpenAI from 'openai';
import { generateText } from 'ai';
import { createNodeEngine } from '${PACKAGE_NAME}/node';
import { openAIFetch } from '${PACKAGE_NAME}/openai';
import { createHearth } from '${PACKAGE_NAME}/ai-sdk';
const engine = await createNodeEngine({ modelsDir: null, cache: { persistent: false } });
await engine.load({ path: process.argv[2] });
const openai = new OpenAI({ fetch: openAIFetch(engine), baseURL: 'http://hearth.local/v1', apiKey: 'unused' });
const r = await openai.chat.completions.create({ model: 'local', messages: [{ role: 'user', content: 'Hi' }] });
const hearth = createHearth(engine);
const { text } = await generateText({ model: hearth(), prompt: 'Hi' });
await engine.unload();
console.log(JSON.stringify({ openai: r.choices[0].message.content, ai: text }));
`,
      },
      ['openai', 'ai'].map((name) => `${name}@${devDependencies[name]}`),
    ); // the versions the repository tests with
    const out = JSON.parse(
      execFileSync('node', ['answer.mjs', modelPath('qwen2-hello')], { cwd: dir, encoding: 'utf8' }),
    );
    expect(out).toEqual({ openai: 'Hello, world!', ai: 'Hello, world!' });
  });
});
