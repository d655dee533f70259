// A split model given as local files (ModelSource File[]: what a file input with `multiple` gives): its parts put in
// order whatever order they were picked in, and a set that is not one model's parts refused saying which part is
// missing or which file is not a part. Loading such a set runs in the browsers (e2e/models.spec.ts).
import { describe, expect, it } from 'vitest';
import { splitFiles } from '../../src/core/models/source.ts';

const part = (i: number, of = 3, base = 'model-q4_k_m') =>
  new File([`part ${i}`], `${base}-${String(i).padStart(5, '0')}-of-${String(of).padStart(5, '0')}.gguf`);

describe('a split model picked as files', () => {
  it('is put in order, from any order', () => {
    const ordered = splitFiles([part(3), part(1), part(2)]);
    expect(ordered.map((p) => p.name)).toEqual([part(1).name, part(2).name, part(3).name]);
    expect(splitFiles([part(1, 1)]).map((p) => p.name)).toEqual([part(1, 1).name]);
  });

  it('is refused, naming what is wrong, when a part is missing, a file is not a part, or a part comes twice', () => {
    expect(() => splitFiles([part(2), part(3)])).toThrow(/missing: model-q4_k_m-00001-of-00003\.gguf/);
    expect(() => splitFiles([part(1), part(2), part(3), new File(['x'], 'notes.txt')])).toThrow(
      /not parts of it: notes\.txt/,
    );
    expect(() => splitFiles([part(1), part(2), part(3), part(3)])).toThrow(/Pick every part of the model/);
    expect(() => splitFiles([new File(['a'], 'a.gguf'), new File(['b'], 'b.gguf')])).toThrow(/split model/);
    expect(() => splitFiles([part(1), 'model.gguf'])).toThrow(/File objects/);
  });
});
