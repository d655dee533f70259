// The polyfill's configuration before any engine: the model a page names (a URL, a Hub file, or an entry of the app's
// catalogue with its projector), and a configuration element that names none or is not JSON defines nothing.
import { describe, expect, it } from 'vitest';
import { CATALOGUE } from '../../src/app/catalogue.ts';
import { catalogued, pageConfig } from '../../src/prompt-api/polyfill.ts';

const page = (text: string | null) =>
  ({ getElementById: () => (text === null ? null : { textContent: text }) }) as never;

describe('the model a configuration names', () => {
  it('a catalogue id is its entry: the Hub file, and the projector where it has one (a page’s own wins)', () => {
    const text = CATALOGUE.find((e) => !e.projector)!;
    expect(catalogued({ model: { catalogue: text.id } })).toEqual({ model: { hf: text.hf }, load: {} });
    const vision = CATALOGUE.find((e) => e.projector)!;
    expect(catalogued({ model: { catalogue: vision.id }, load: { nCtx: 4096 } })).toEqual({
      model: { hf: vision.hf },
      load: { projector: { hf: { ...vision.hf, file: vision.projector } }, nCtx: 4096 },
    });
    const own = 'https://example.com/mmproj.gguf';
    expect(catalogued({ model: { catalogue: vision.id }, load: { projector: own } }).load?.projector).toBe(own);
    expect(() => catalogued({ model: { catalogue: 'gpt-5' } })).toThrow(/no model "gpt-5"; it has .*qwen2\.5-0\.5b/);
    expect(catalogued({ model: 'https://example.com/m.gguf' }).model).toBe('https://example.com/m.gguf');
  });

  it('a page’s configuration element: a URL, a Hub file or a catalogue id; anything else defines nothing', () => {
    expect(pageConfig(page('{"model":{"catalogue":"qwen2.5-0.5b"}}'))?.model).toEqual({ catalogue: 'qwen2.5-0.5b' });
    expect(pageConfig(page('{"model":"https://example.com/m.gguf"}'))).not.toBeNull();
    for (const bad of ['{"model":{"catalogue":"nope"}}', '{"model":{"hf":{"repo":"a"}}}', 'not json', '{}']) {
      expect(pageConfig(page(bad)), bad).toBeNull();
    }
    expect(pageConfig(page(null))).toBeNull();
  });
});
