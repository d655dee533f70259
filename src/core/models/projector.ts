// A model's projector (LoadOptions.projector: the mmproj GGUF with its image and audio encoder) found and opened like
// a model: a URL or { hf } file through the model store, a Blob as it is. `true` beside a { hf } model, or { hf } with
// a repo and no file, asks the Hub's file list for the repo's mmproj*.gguf.
import { ModelLoadError } from '../../errors.ts';
import type { HfFile, LoadOptions, ModelSource } from '../../types.ts';
import type { ModelFile } from './file.ts';
import { DEFAULT_HF, fetchOk, hubEndpoint } from './web-source.ts';
import { openSource, type SourceOptions } from './source.ts';

type HfRepo = Omit<HfFile, 'file'> & { file?: string };

export async function openProjector(
  projector: NonNullable<LoadOptions['projector']>,
  model: ModelSource,
  maxBytes: number,
  opts: SourceOptions,
): Promise<ModelFile> {
  let source: ModelSource;
  if (projector === true) {
    if (!model || typeof model !== 'object' || !('hf' in model)) {
      throw new ModelLoadError(
        "projector: true finds the projector in the model's Hugging Face repo, so it needs a { hf } model; " +
          'otherwise pass the projector file (a URL, Blob or { hf: { repo, file } })',
        'invalid_projector',
      );
    }
    source = { hf: await hubProjector(model.hf, opts) };
  } else if (typeof projector === 'object' && 'hf' in projector && !(projector.hf as HfRepo).file) {
    source = { hf: await hubProjector(projector.hf as HfRepo, opts) };
  } else {
    source = projector as ModelSource;
  }
  if (maxBytes <= 0) {
    throw new ModelLoadError(
      'the model alone takes the whole memory budget (maxModelBytes): no room for its projector',
      'too_large',
    );
  }
  const file = await openSource(source, { ...opts, maxBytes });
  if (file.size > maxBytes) {
    throw new ModelLoadError(
      `the model and its projector (${file.name}) are larger than this engine holds (maxModelBytes): pick a smaller ` +
        'quantization of either',
      'too_large',
      { bytes: file.size, maxBytes },
    );
  }
  return file;
}

/** The repo's projector file: mmproj*.gguf, f16 first (what llama.cpp's converter writes by default), else the first.
 */
async function hubProjector(hf: HfRepo, opts: SourceOptions): Promise<HfFile> {
  if (typeof hf.repo !== 'string' || !/^[\w.-]+\/[\w.-]+$/.test(hf.repo)) {
    throw new ModelLoadError(
      `projector: expected { hf: { repo: "owner/name" } }, got ${JSON.stringify(hf)}`,
      'invalid_projector',
    );
  }
  const endpoint = hubEndpoint(hf, opts.hfEndpoint ?? DEFAULT_HF);
  const api = `${endpoint}/api/models/${hf.repo}/tree/${encodeURIComponent(hf.revision ?? 'main')}`;
  const entries = (await (await fetchOk(api, opts)).json().catch(() => null)) as Array<{
    type?: string;
    path?: string;
  }> | null;
  const names = (Array.isArray(entries) ? entries : [])
    .filter((e) => e?.type === 'file' && typeof e.path === 'string')
    .map((e) => e.path!)
    .filter((p) => /(^|\/)mmproj[^/]*\.gguf$/i.test(p));
  const file = names.find((p) => /f16/i.test(p)) ?? names[0];
  if (!file) {
    throw new ModelLoadError(
      `${hf.repo} has no mmproj*.gguf file (the projector a model needs for images and audio): ` +
        'name the projector file with { hf: { repo, file } }',
      'invalid_projector',
      { url: api },
    );
  }
  return { ...hf, file };
}
