/** llama.cpp's log lines, kept so a failed call can say why (see mark/since). */
export class LogTail {
  private entries: Array<{ n: number; line: string }> = [];
  private count = 0;
  private partial = '';
  private partialLevel = 0;

  push(level: number, text: string) {
    // llama.cpp logs in fragments; level 5 (GGML_LOG_LEVEL_CONT) continues the previous line at its level.
    if (!this.partial) this.partialLevel = level;
    this.partial += text;
    if (!this.partial.endsWith('\n')) return;
    const prefix = this.partialLevel === 4 ? 'error: ' : this.partialLevel === 3 ? 'warning: ' : '';
    for (const line of this.partial.split('\n')) {
      if (line.trim()) this.entries.push({ n: this.count++, line: prefix + line.trim() });
    }
    this.partial = '';
    if (this.entries.length > 300) this.entries.splice(0, this.entries.length - 300);
  }

  mark(): number {
    return this.count;
  }

  /** Lines logged since mark(); only errors and warnings when `problems`. */
  since(mark: number, problems = false): string[] {
    return this.entries
      .filter((e) => e.n >= mark && (!problems || /^(error|warning): /.test(e.line)))
      .map((e) => e.line);
  }
}
