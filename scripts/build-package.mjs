// npm run build:package — the npm package, staged in .cache/package/ and packed to .cache/hearth-llm-<version>.tgz:
//   lib/      the library as ES modules (entries index, node, widget, openai, ai-sdk, prompt-api) with .d.ts in lib/types/; @huggingface/jinja
//             with patches/ applied is built in (lib/jinja.js), so users get the renderer the template tests prove
//   bin/      hearth.js, the command line (`npx hearth prompt-state …`: src/cli.ts)
//   widget/   the static folder a site copies as-is: hearth-chat.js and its chunks, beside the engine's files (the
//             worker, the wasm builds and their glue, wllama's wasm), which the library finds there too
// Its package.json is written here: no install scripts, no dev dependencies. The repository's own package.json stays
// the development one (patch-package, the test tools). Needs the wasm builds (npm run build:wasm).
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { build } from 'vite';
import { buildDefine, filesUnder } from './build-id.mjs';
import { buildWidget } from './build-widget.mjs';
import { copyWllamaWasm, workerBuildConfig } from './build-worker.mjs';
import { root } from './llama-source.mjs';

export const PACKAGE_NAME = 'hearth-llm';
export const stageDir = join(root, '.cache', 'package');
const dev = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
export const tarballPath = join(root, '.cache', `${PACKAGE_NAME}-${dev.version}.tgz`);

// The engine's files, from public/hearth (npm run build:wasm, build:worker): src/core/assets.ts's ASSET_FILES
// (this script runs in plain Node, which cannot import it; test/package.test.ts checks the two agree) and
// build-info.json. Not the worker's source map (1 MB).
const ENGINE_FILES = [
  'engine.worker.js',
  'hearth-st.js',
  'hearth-st.wasm',
  'hearth-st-relaxed.wasm',
  'hearth-mt.js',
  'hearth-mt.wasm',
  'hearth-mt-relaxed.wasm',
  'hearth-webgpu.js',
  'hearth-webgpu.wasm',
  'wllama.wasm',
  'build-info.json',
];
// Bundled into the package (patched), so not a dependency of it.
const BUILT_IN = ['@huggingface/jinja'];
const dependencies = Object.fromEntries(Object.entries(dev.dependencies).filter(([name]) => !BUILT_IN.includes(name)));

/** @param {string} outDir */
async function buildLibrary(outDir) {
  const external = (/** @type {string} */ id) =>
    id.startsWith('node:') || Object.keys(dependencies).some((d) => id === d || id.startsWith(`${d}/`));
  await build({
    configFile: false,
    root,
    logLevel: 'warn',
    // null: a bundled widget finds the engine's files as the library does (packaged-assets.js).
    define: { ...buildDefine(), __HEARTH_WIDGET_ASSETS__: 'null' },
    plugins: [
      {
        // src/core/packaged-assets.ts (null in this repository) becomes lib/packaged-assets.js, written below.
        name: 'hearth-packaged-assets',
        enforce: 'pre',
        resolveId: (id) => (/\/packaged-assets\.ts$/.test(id) ? { id: './packaged-assets.js', external: true } : null),
      },
    ],
    build: {
      lib: {
        entry: {
          index: join(root, 'src/index.ts'),
          node: join(root, 'src/node.ts'),
          cli: join(root, 'src/cli.ts'),
          widget: join(root, 'src/widget/hearth-chat.ts'),
          openai: join(root, 'src/openai.ts'),
          'ai-sdk': join(root, 'src/ai-sdk.ts'),
          'prompt-api': join(root, 'src/prompt-api/prompt-api.ts'),
          'prompt-api-polyfill': join(root, 'src/prompt-api/auto-install.ts'),
          jinja: join(root, 'node_modules/@huggingface/jinja/dist/index.js'),
        },
        formats: ['es'],
      },
      outDir,
      emptyOutDir: true,
      target: 'es2022',
      minify: false, // a library: the application's bundler minifies
      sourcemap: false,
      copyPublicDir: false,
      // Flat, so './packaged-assets.js' is right from every chunk.
      rollupOptions: { external, output: { entryFileNames: '[name].js', chunkFileNames: '[name]-[hash].js' } },
    },
  });
  // Each file by a literal new URL(…, import.meta.url): bundlers copy what it names and rewrite the address; Node
  // and a static host resolve it beside this module.
  const urls = ENGINE_FILES.filter((f) => !f.endsWith('.json'))
    .map((f) => `  '${f}': new URL('../widget/${f}', import.meta.url).href,`)
    .join('\n');
  writeFileSync(
    join(outDir, 'packaged-assets.js'),
    `// Where the engine's files are: the package's widget/ folder (scripts/build-package.mjs writes this file).\nexport default {\n${urls}\n};\n`,
  );
}

/** @param {string} outDir */
function buildTypes(outDir) {
  const config = join(root, '.cache', 'tsconfig.package.json');
  writeFileSync(
    config,
    JSON.stringify(
      {
        extends: '../tsconfig.json',
        compilerOptions: {
          noEmit: false,
          declaration: true,
          emitDeclarationOnly: true,
          rewriteRelativeImportExtensions: true,
          rootDir: '../src',
          outDir,
          types: ['node'],
        },
        include: [],
        files: [
          '../src/index.ts',
          '../src/node.ts',
          '../src/widget/hearth-chat.ts',
          '../src/openai.ts',
          '../src/ai-sdk.ts',
          '../src/prompt-api/prompt-api.ts',
          '../src/prompt-api/auto-install.ts',
        ],
      },
      null,
      2,
    ),
  );
  execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', config], { stdio: 'inherit' });
  // The sources import each other as './<name>.ts'; a declaration names the file beside it, './<name>.js' (whose types
  // are './<name>.d.ts'), which every moduleResolution setting finds.
  for (const file of filesUnder(outDir).filter((f) => f.endsWith('.d.ts'))) {
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\.ts\2/g, '$1$2$3.js$2'),
    );
  }
}

/** Entries whose lib/ file is named apart from their source's path (lib/ is flat). */
const LIB_NAMES = /** @type {Record<string, string>} */ ({
  'widget/hearth-chat': 'widget',
  'prompt-api/prompt-api': 'prompt-api',
  'prompt-api/auto-install': 'prompt-api-polyfill',
});

function packageJson() {
  const entry = (/** @type {string} */ name) => ({
    types: `./lib/types/${name}.d.ts`,
    default: `./lib/${LIB_NAMES[name] ?? name}.js`,
  });
  return {
    name: PACKAGE_NAME,
    version: dev.version,
    description: dev.description,
    license: dev.license,
    keywords: [
      'llm',
      'llama.cpp',
      'gguf',
      'webassembly',
      'wasm',
      'webgpu',
      'browser',
      'openai',
      'chat',
      'kv-cache',
      'indexeddb',
    ],
    type: 'module',
    exports: {
      '.': entry('index'),
      './node': entry('node'),
      './widget': entry('widget/hearth-chat'),
      './openai': entry('openai'),
      './ai-sdk': entry('ai-sdk'),
      './prompt-api': entry('prompt-api/prompt-api'),
      './prompt-api/polyfill': entry('prompt-api/auto-install'),
      './package.json': './package.json',
    },
    types: './lib/types/index.d.ts',
    bin: { hearth: 'bin/hearth.js' },
    files: ['lib', 'bin', 'widget', 'docs', 'CHANGELOG.md'],
    // Importing the widget entry registers <hearth-chat>, the Prompt API's polyfill defines LanguageModel; nothing else
    // runs on import.
    sideEffects: ['./lib/widget.js', './lib/prompt-api-polyfill.js', './widget/*'],
    engines: dev.engines,
    dependencies,
    // hearth-llm/ai-sdk's types name the AI SDK's provider interfaces; its code needs nothing from it.
    peerDependencies: { '@ai-sdk/provider': '^4.0.0' },
    peerDependenciesMeta: { '@ai-sdk/provider': { optional: true } },
  };
}

export async function buildPackage() {
  for (const f of ENGINE_FILES.filter((f) => f.startsWith('hearth-'))) {
    if (!existsSync(join(root, 'public/hearth', f))) {
      throw new Error(`public/hearth/${f} is missing: run "npm run build:wasm" first`);
    }
  }
  copyWllamaWasm();
  await build(workerBuildConfig());
  rmSync(stageDir, { recursive: true, force: true });
  mkdirSync(stageDir, { recursive: true });
  await buildLibrary(join(stageDir, 'lib'));
  buildTypes(join(stageDir, 'lib', 'types'));
  const widgetDir = join(stageDir, 'widget');
  await buildWidget({ outDir: widgetDir, ownAssets: './' });
  rmSync(join(widgetDir, 'size.json'));
  for (const f of ENGINE_FILES) copyFileSync(join(root, 'public/hearth', f), join(widgetDir, f));
  // Without its source map (1 MB), the worker must not name one: dev servers and DevTools would ask for it.
  const worker = join(widgetDir, 'engine.worker.js');
  writeFileSync(worker, readFileSync(worker, 'utf8').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'));
  // The glue scripts are CommonJS when Node requires them (hearth-llm/node).
  writeFileSync(join(widgetDir, 'package.json'), '{ "type": "commonjs" }\n');
  for (const f of ['README.md', 'CHANGELOG.md', 'LICENSE']) copyFileSync(join(root, f), join(stageDir, f));
  // The README's links to the docs pages resolve in the installed package too (the pictures stay in the repository).
  mkdirSync(join(stageDir, 'docs'));
  for (const f of readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md'))) {
    copyFileSync(join(root, 'docs', f), join(stageDir, 'docs', f));
  }
  mkdirSync(join(stageDir, 'bin'));
  writeFileSync(
    join(stageDir, 'bin', 'hearth.js'),
    "#!/usr/bin/env node\nimport { main } from '../lib/cli.js';\n\nprocess.exitCode = await main(process.argv.slice(2));\n",
    { mode: 0o755 },
  );
  writeFileSync(join(stageDir, 'package.json'), `${JSON.stringify(packageJson(), null, 2)}\n`);
  rmSync(tarballPath, { force: true });
  execFileSync('npm', ['pack', '--silent', '--pack-destination', join(root, '.cache')], {
    cwd: stageDir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  console.log(`[build:package] ${tarballPath}: ${(statSync(tarballPath).size / 1e6).toFixed(1)} MB`);
}

if (import.meta.url === `file://${process.argv[1]}`) await buildPackage();
