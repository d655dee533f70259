// Opening LoadOptions.promptState: a Blob as it is; a URL through the model store like a model (downloaded once,
// resumed, offline afterwards), checked as a prompt state file instead of a GGUF model.
import { AbortError, ModelLoadError } from '../../../errors.ts';
import type { Progress } from '../../../types.ts';
import {
  blobReader,
  notPromptStateStart,
  PromptStateMismatch,
  readPromptStateHeader,
  type Readable,
} from './file-format.ts';
import { openSource, type SourceOptions } from '../../../core/models/source.ts';
import type { StoredFormat } from '../../../core/models/store-download.ts';

export const PROMPT_STATE_FILE: StoredFormat = {
  what: 'a Hearth prompt state file',
  start: notPromptStateStart,
  async check(files) {
    try {
      await readPromptStateHeader(files.parts[0]!);
    } catch (err) {
      if (!(err instanceof PromptStateMismatch)) throw err;
      throw new ModelLoadError(
        `${files.name} is not a usable prompt state file: ${err.message}. It was deleted.`,
        'invalid_file',
      );
    }
  },
};

/** The prompt state file, or a warning saying why there is none: a state that cannot be had never fails a load. */
export async function openPromptState(
  source: string | Blob,
  opts: SourceOptions,
): Promise<Readable | { warning: string }> {
  if (typeof Blob !== 'undefined' && source instanceof Blob) return blobReader(source);
  const onProgress = opts.onProgress && ((p: Progress) => opts.onProgress!({ ...p, file: 'prompt-state' }));
  try {
    const file = await openSource(source, { ...opts, onProgress, format: PROMPT_STATE_FILE });
    return file.parts[0]!;
  } catch (err) {
    if (err instanceof AbortError || opts.signal?.aborted) throw err;
    return {
      warning: `the prompt state ${typeof source === 'string' ? source : ''} was not loaded: ${(err as Error).message}`,
    };
  }
}
