// The Prompt API's inputs and kept sessions, before any engine: what the specification refuses is refused with its
// error, audio that is not audio is a DataError, a stored session record that is not one of ours is ignored, and
// expected languages are checked against the configuration's.
import 'fake-indexeddb/auto';
import { createStore, set } from 'idb-keyval';
import { describe, expect, it } from 'vitest';
import { domError, quotaExceeded } from '../../src/prompt-api/dom-errors.ts';
import { toMessages } from '../../src/prompt-api/input.ts';
import { languagesTaken } from '../../src/prompt-api/model-host.ts';
import { loadSession, saveSession } from '../../src/prompt-api/saved-sessions.ts';
import { AbortError, ContextFullError, InvalidRequestError } from '../../src/errors.ts';

const textOnly = new Set(['text'] as const);
const withAudio = new Set(['text', 'audio'] as const);

describe('Prompt API inputs', () => {
  it('a string, or anything else but an array, is one user message of its text', async () => {
    expect(await toMessages('Hi', textOnly, true)).toEqual([{ role: 'user', content: 'Hi' }]);
    expect(await toMessages({}, textOnly, true)).toEqual([{ role: 'user', content: '[object Object]' }]);
    expect(await toMessages(null, textOnly, true)).toEqual([{ role: 'user', content: 'null' }]);
    expect(await toMessages([], textOnly, true)).toEqual([]);
    expect(await toMessages([{ role: 'user', content: [{ type: 'text', value: 'a' }] }], textOnly, true)).toEqual([
      { role: 'user', content: 'a' },
    ]);
  });

  it('a system message only first of a session: TypeError elsewhere, or twice', async () => {
    const system = { role: 'system', content: 's' };
    const user = { role: 'user', content: 'u' };
    expect(await toMessages([system, user], textOnly, true)).toHaveLength(2);
    await expect(toMessages([user, system], textOnly, true)).rejects.toBeInstanceOf(TypeError);
    await expect(toMessages([system, system], textOnly, true)).rejects.toBeInstanceOf(TypeError);
    await expect(toMessages([system], textOnly, false)).rejects.toBeInstanceOf(TypeError);
    await expect(toMessages([{ role: 'tool', content: 'x' }], textOnly, true)).rejects.toBeInstanceOf(TypeError);
  });

  it('media the session did not expect, media from the assistant, a non-string text: the specification errors', async () => {
    const audio = [{ role: 'user', content: [{ type: 'audio', value: new Blob(['RIFF\0\0\0\0WAVE']) }] }];
    await expect(toMessages(audio, textOnly, true)).rejects.toMatchObject({ name: 'NotSupportedError' });
    const fromAssistant = [{ role: 'assistant', content: [{ type: 'audio', value: new Blob(['x']) }] }];
    await expect(toMessages(fromAssistant, withAudio, true)).rejects.toMatchObject({ name: 'NotSupportedError' });
    const number = [{ role: 'user', content: [{ type: 'text', value: 5 }] }];
    await expect(toMessages(number, textOnly, true)).rejects.toMatchObject({ name: 'SyntaxError' });
    const soup = [{ role: 'user', content: [{ type: 'soup', value: 'x' }] }];
    await expect(toMessages(soup, textOnly, true)).rejects.toBeInstanceOf(TypeError);
  });

  it('audio bytes are sniffed: a WAV goes as a WAV, anything else is a DataError', async () => {
    const wav = new Uint8Array(
      [...'RIFF']
        .map((c) => c.charCodeAt(0))
        .concat(
          [0, 0, 0, 0],
          [...'WAVE'].map((c) => c.charCodeAt(0)),
        ),
    );
    const [m] = await toMessages([{ role: 'user', content: [{ type: 'audio', value: wav.buffer }] }], withAudio, true);
    expect(m!.content).toEqual([{ type: 'input_audio', input_audio: { data: expect.any(Blob), format: 'wav' } }]);
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
    await expect(
      toMessages([{ role: 'user', content: [{ type: 'audio', value: png }] }], withAudio, true),
    ).rejects.toMatchObject({
      name: 'DataError',
    });
  });
});

describe('Prompt API errors', () => {
  it("Hearth's errors become the DOMExceptions a page written for Chrome catches, the Hearth error as the cause", () => {
    const full = domError(new ContextFullError('too long', { promptTokens: 900, nCtx: 512 })) as DOMException & {
      requested: number;
      quota: number;
    };
    expect(full).toBeInstanceOf(DOMException);
    expect([full.name, full.code, full.requested, full.quota]).toEqual(['QuotaExceededError', 22, 900, 512]);
    expect(full.cause).toBeInstanceOf(ContextFullError);
    expect((domError(new AbortError()) as DOMException).name).toBe('AbortError');
    expect((domError(new InvalidRequestError('bad', 'invalid_parameter')) as DOMException).name).toBe(
      'NotSupportedError',
    );
    const reason = new Error('mine');
    expect(domError(new AbortError(), AbortSignal.abort(reason))).toBe(reason); // the signal's own reason
    expect(quotaExceeded('x', 3, 2)).toMatchObject({ name: 'QuotaExceededError', requested: 3, quota: 2 });
  });
});

describe('kept sessions', () => {
  it('a record is used only when it is whole and ours: anything else under the id is ignored', async () => {
    await saveSession('good', {
      messages: [{ role: 'user', content: 'Hi' }],
      tokens: [1],
      samplingMode: 'balanced',
    });
    expect((await loadSession('good'))?.messages).toEqual([{ role: 'user', content: 'Hi' }]);
    const store = createStore('hearth-prompt-api', 'sessions');
    const damaged: unknown[] = [
      null,
      'a string',
      { v: 2, messages: [], tokens: [], samplingMode: 'balanced' }, // another version
      { v: 1, messages: [{ role: 'user', content: 'Hi' }], tokens: [], samplingMode: 'balanced' },
      { v: 1, messages: [null], tokens: [1], samplingMode: 'balanced' },
      { v: 1, messages: [], tokens: [], samplingMode: 7 },
      { v: 1, messages: [{ role: 'user', content: 'Hi' }], tokens: [-1], samplingMode: 'balanced' },
    ];
    for (const [i, record] of damaged.entries()) {
      await set(`bad-${i}`, record, store);
      expect(await loadSession(`bad-${i}`)).toBeNull();
    }
    expect(await loadSession('never-saved')).toBeNull();
  });
});

describe('the languages a configuration takes', () => {
  const engine = null as never;
  it("are its model's where it lists them ('en' covers 'en-GB'), else any a browser names; a bad tag is a RangeError", () => {
    const listed = { engine, model: 'x', languages: ['en', 'ja'] };
    expect(languagesTaken(['en-GB', 'JA'], listed)).toBe(true);
    expect(languagesTaken(['zu'], listed)).toBe(false);
    expect(languagesTaken(['zu', 'fr'], { engine, model: 'x' })).toBe(true);
    expect(languagesTaken(['xx'], { engine, model: 'x' })).toBe(false);
    expect(() => languagesTaken(['en-abc-invalid'], listed)).toThrow(RangeError);
  });
});
