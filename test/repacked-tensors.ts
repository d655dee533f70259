// Run by test/kernels.test.ts in a Node started with --experimental-wasm-relaxed-simd: loads each model named on the
// command line with the plain and the relaxed single-thread build and prints, as JSON, how many of its tensors each
// build repacked and into which layouts. Loading computes nothing, so Node 20's faulty relaxed dot product is not
// involved.
import { Llama } from '../src/backends/llamacpp/binding/llama.ts';
import { LlamaModel } from '../src/backends/llamacpp/binding/model.ts';
import { nodeModuleLoader } from '../src/node.ts';
import { modelsDir } from './fixtures/models.ts';

const out: Record<string, Record<string, { tensors: number; layouts: string[] }>> = {};
for (const variant of ['st', 'st-relaxed'] as const) {
  const llama = await Llama.create(await nodeModuleLoader({ variant }).load());
  llama.mod.FS.mkdir('/models');
  llama.mod.FS.mount(llama.mod.NODEFS, { root: modelsDir }, '/models');
  out[variant] = {};
  for (const name of process.argv.slice(2)) {
    const mark = llama.log.mark();
    const model = await LlamaModel.load(llama, `/models/${name}.gguf`);
    if (!model) throw new Error(`${name} did not load with the ${variant} build`);
    const lines = llama.log.since(mark).filter((l) => l.startsWith('repack: repack tensor'));
    out[variant][name] = {
      tensors: lines.length,
      layouts: [...new Set(lines.map((l) => l.split(' with ')[1]!.trim()))],
    };
    model.free();
  }
}
console.log(JSON.stringify(out));
