/**
 * The functions' clock, as libfaketime gives a process one: an offset in ms that every Lambda
 * environment of the rehearsal adds to `Date.now()`, read from a file at each invocation
 * (bootstrap.mjs), so a jump reaches environments already warm. Only the functions' clock moves:
 * the harness, moto and SQS's delays keep real time — a scenario can pass 20 minutes of the
 * engine's time in seconds (a `wait` beyond SQS's reach, through the timers' index).
 */
import { rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** The environment variable that names the file to the environments (container.ts). */
export const CLOCK_OFFSET_ENV = "WEFT_REHEARSAL_CLOCK_OFFSET_FILE";

const file = path.join(os.tmpdir(), `weft-rehearsal-clock-${process.pid}`);

export function clockOffsetFile(): string {
  return file;
}

/** Moves the functions' clock `ms` ahead of real time (0: back to real time) from their next invocation. */
export function setFunctionClockOffset(ms: number): void {
  if (ms === 0) rmSync(file, { force: true });
  else writeFileSync(file, String(Math.round(ms)));
}
