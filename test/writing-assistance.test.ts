// The Writing Assistance APIs (Summarizer, Writer, Rewriter; hearth-llm/prompt-api) on the real wasm engine in Node:
// a call answers as chat.completions does for the messages it makes, on the engine and model of the configuration's
// LanguageModel; the specification's errors (destroy, the create signal, an input over the window, bad options).
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { ModelHost } from '../src/prompt-api/model-host.ts';
import { languageModelClass } from '../src/prompt-api/sessions.ts';
import { writingAssistanceClasses } from '../src/prompt-api/writing-assistance.ts';
import { cachedEngine, modelPath, newDb, trackEngines } from './helpers.ts';

const track = trackEngines();
const LOAD = { nCtx: 512 };

async function page() {
  const engine = await track(cachedEngine('qwen2-hello', { db: newDb(), ...LOAD }));
  const config = { engine, model: { path: modelPath('qwen2-hello') }, load: LOAD };
  const host = new ModelHost(config);
  return { engine, LanguageModel: languageModelClass(config, host), ...writingAssistanceClasses(host) };
}

describe('Summarizer, Writer and Rewriter', () => {
  it('answer through the engine with the options they were made with, on the LanguageModel’s engine and model', async () => {
    const { engine, LanguageModel, Summarizer, Writer, Rewriter } = await page();
    const summarizer = await Summarizer.create({ type: 'tldr', length: 'medium', sharedContext: 'A bakery.' });
    expect([summarizer.type, summarizer.format, summarizer.length]).toEqual(['tldr', 'markdown', 'medium']);
    expect([summarizer.expectedInputLanguages, summarizer.outputLanguage]).toEqual([null, null]);
    expect(summarizer.inputQuota).toBe(512);
    const text = 'Bread is baked from flour, water and salt. Sourdough rises slowly.';
    const usage = await summarizer.measureInputUsage(text, { context: 'For children.' });
    const alone = (await engine.countTokens({ text })).prompt_tokens;
    expect(usage).toBeGreaterThan(alone); // the instruction, the shared context and the context are read with it
    const summary = await summarizer.summarize(text, { context: 'For children.' });
    expect(typeof summary).toBe('string');
    expect(summary.length).toBeGreaterThan(0);
    expect(await summarizer.summarize('  ')).toBe(''); // nothing to summarize: no model call
    let streamed = '';
    for await (const piece of summarizer.summarizeStreaming(text)) streamed += piece;
    expect(streamed.length).toBeGreaterThan(0);
    const writer = await Writer.create({ tone: 'formal' });
    expect([writer.tone, writer.format, writer.length]).toEqual(['formal', 'markdown', 'short']);
    expect((await writer.write('A note to the baker.')).length).toBeGreaterThan(0);
    const rewriter = await Rewriter.create({ length: 'shorter' });
    expect([rewriter.tone, rewriter.format, rewriter.length]).toEqual(['as-is', 'as-is', 'shorter']);
    expect((await rewriter.rewrite(text)).length).toBeGreaterThan(0);
    // One model for all four classes: LanguageModel finds it loaded.
    expect(await LanguageModel.availability()).toBe('available');
  });

  it('refuse as the specification says: destroy, the create signal, a long input, bad options', async () => {
    const { Summarizer, Writer } = await page();
    const s = await Summarizer.create();
    const pending = [s.summarize('Bread.'), s.measureInputUsage('Bread.')];
    s.destroy();
    for (const p of pending) await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    await expect(s.summarize('Bread.')).rejects.toMatchObject({ name: 'AbortError' });
    expect(() => s.summarizeStreaming('Bread.')).toThrow(expect.objectContaining({ name: 'AbortError' }));

    const controller = new AbortController();
    const w = await Writer.create({ signal: controller.signal });
    const writing = w.write('A poem.');
    const reason = new Error('the page moved on');
    controller.abort(reason);
    await expect(writing).rejects.toBe(reason);
    await expect(w.measureInputUsage('x')).rejects.toBe(reason);

    const fresh = await Writer.create();
    await expect(fresh.write('bread '.repeat(600))).rejects.toMatchObject({
      name: 'QuotaExceededError',
      quota: 512,
    });
    expect((await fresh.write('A short note.')).length).toBeGreaterThan(0); // it goes on

    await expect(Summarizer.create({ type: 'essay' })).rejects.toBeInstanceOf(TypeError);
    await expect(Summarizer.availability({ expectedInputLanguages: ['en-abc-invalid'] })).rejects.toBeInstanceOf(
      RangeError,
    );
    expect(await Summarizer.availability({ outputLanguage: 'xx' })).toBe('unavailable');
    await expect(Summarizer.create({ outputLanguage: 'xx' })).rejects.toMatchObject({ name: 'NotSupportedError' });
    expect((await Summarizer.create({ expectedInputLanguages: ['EN'] })).expectedInputLanguages).toEqual(['en']);
  });
});
