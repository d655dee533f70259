// Token bytes to text, one token at a time. A token may end in the middle of a UTF-8 character (byte-level BPE
// splits emoji and CJK across tokens); the streaming TextDecoder holds such bytes back until the character is whole.
export class Detokenizer {
  private decoder = new TextDecoder('utf-8', { fatal: false });

  constructor(private readonly tokenBytes: (token: number) => Uint8Array) {}

  /** The text this token completes (possibly '' while a character is incomplete). */
  push(token: number): string {
    return this.decoder.decode(this.tokenBytes(token), { stream: true });
  }

  /** Whatever is held back at the end (an incomplete character becomes U+FFFD). */
  flush(): string {
    return this.decoder.decode();
  }
}
