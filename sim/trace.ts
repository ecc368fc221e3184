/**
 * The trace of a run: one line per scheduler step. It is hashed as it grows (FNV-1a, 64 bits as two
 * 32-bit halves) so two runs of one seed can be compared, and the last lines are kept for a report.
 */
export class Trace {
  private h1 = 0x811c9dc5;
  private h2 = 0x01000193;
  private readonly tail: string[] = [];
  private readonly all: string[] | undefined;
  lines = 0;

  constructor(
    private readonly keep = 200,
    keepAll = false,
  ) {
    this.all = keepAll ? [] : undefined;
  }

  add(line: string): void {
    this.lines++;
    for (let i = 0; i < line.length; i++) {
      const c = line.charCodeAt(i);
      this.h1 = Math.imul(this.h1 ^ c, 0x01000193);
      this.h2 = Math.imul(this.h2 ^ c, 0x0100019d) ^ (this.h1 >>> 7);
    }
    this.h1 = Math.imul(this.h1 ^ 10, 0x01000193);
    this.tail.push(line);
    if (this.tail.length > this.keep) this.tail.shift();
    this.all?.push(line);
  }

  hash(): string {
    return `${(this.h1 >>> 0).toString(16).padStart(8, "0")}${(this.h2 >>> 0).toString(16).padStart(8, "0")}`;
  }

  /** The last lines (or every line, when kept). */
  lastLines(): string[] {
    return this.all ?? [...this.tail];
  }
}
