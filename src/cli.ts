// `npx hearth prompt-state --model <gguf> --system <file> -o <file>`: a site owner writes the state of the system
// prompt every visitor's conversation starts with, once, with the same wasm build visitors run (hearth-llm/node), and
// ships it beside the model (LoadOptions.promptState, <hearth-chat prompt-state>).
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { formatBytes } from './core/bytes.ts';
import { blobReader, readPromptStateHeader } from './backends/llamacpp/prompt-state/file-format.ts';
import { createNodeEngine } from './node.ts';
import type { GgmlType, Progress, Tool } from './types.ts';

const USAGE = `Usage: hearth prompt-state --model <model.gguf> --system <system-prompt.txt> -o <out.hearth-state>
  [--tools <tools.json>] [--kv-type f32|f16] [--n-ctx <tokens>] [--threads <n>]

Writes the computed state of the system prompt (and tools) for this model file. Ship it beside the model and load it
with engine.load(model, { promptState: url }) or <hearth-chat prompt-state="url">: a visitor's first answer then
starts after the system prompt instead of reading it. The KV type is Hearth's default for this model (what a page
picks: f32 where 8,192 tokens fit in 512 MiB, else f16) unless --kv-type says; f16 halves the file, and the page
then loads the model with an f16 KV cache (the file says so; Hearth follows it unless told otherwise).`;

const parseOptions = (args: string[]) =>
  parseArgs({
    args,
    strict: true,
    options: {
      model: { type: 'string' },
      system: { type: 'string' },
      out: { type: 'string', short: 'o' },
      tools: { type: 'string' },
      'kv-type': { type: 'string' },
      'n-ctx': { type: 'string' },
      threads: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== 'prompt-state') {
    console.error(
      command && command !== '--help' && command !== '-h' ? `unknown command: ${command}\n\n${USAGE}` : USAGE,
    );
    return command === '--help' || command === '-h' ? 0 : 2;
  }
  let values: ReturnType<typeof parseOptions>['values'];
  try {
    ({ values } = parseOptions(rest));
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const { model, system, out } = values;
  const kv = values['kv-type'];
  if (!model || !system || !out || (kv !== undefined && kv !== 'f32' && kv !== 'f16')) {
    console.error(`--model, --system and -o are needed; --kv-type is f32 or f16\n\n${USAGE}`);
    return 2;
  }
  const tools = values.tools ? (JSON.parse(readFileSync(values.tools, 'utf8')) as Tool[]) : undefined;
  const threads = values.threads ? Number(values.threads) : 1;
  const engine = await createNodeEngine({
    cache: { persistent: false },
    modelsDir: null,
    threads,
    variant: threads > 1 ? 'mt' : 'st',
  });
  try {
    const info = await engine.load(
      { path: model },
      {
        ...(kv ? { cacheTypeK: kv as GgmlType, cacheTypeV: kv as GgmlType } : {}),
        nCtx: values['n-ctx'] ? Number(values['n-ctx']) : undefined,
        onProgress: progress('load'),
      },
    );
    const t0 = performance.now();
    const blob = await engine.cache.exportPrompt({
      messages: [{ role: 'system', content: readFileSync(system, 'utf8') }],
      tools,
      onProgress: progress('prefill'),
    });
    writeFileSync(out, new Uint8Array(await blob.arrayBuffer()));
    const s = (performance.now() - t0) / 1000;
    process.stderr.write('\n');
    const { header } = await readPromptStateHeader(blobReader(blob));
    console.log(
      `${out}: ${formatBytes(blob.size)}, the state of ${header.tokens.length} tokens of ${info.name} ` +
        `(${header.typeK} KV cache), computed in ${s.toFixed(1)} s`,
    );
    return 0;
  } finally {
    await engine.unload();
  }
}

/** One line on stderr that updates, for a phase's progress. */
function progress(phase: Progress['phase']) {
  return (p: Progress) => {
    if (p.phase !== phase || !p.total || !process.stderr.isTTY) return;
    process.stderr.write(`\r${phase} ${Math.round((100 * p.loaded) / p.total)}%`);
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(`hearth: ${(err as Error).message}`);
      process.exit(1);
    },
  );
}
