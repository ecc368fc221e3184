/**
 * cli/signals.ts on a fake clock and a fake signal source: one press of Ctrl-C that reaches the
 * process several times (terminal, npm, tsx) is one press; a press a second or more later forces.
 */
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { commandInterrupt, onShutdownSignals, SAME_PRESS_MS, signalExitCode } from "../../cli/signals.js";

function harness() {
  const source = new EventEmitter();
  let now = 1_000_000;
  const seen: string[] = [];
  const send = (signal: NodeJS.Signals, afterMs = 0) => {
    now += afterMs;
    source.emit(signal, signal);
  };
  return { source, seen, send, now: () => now };
}

describe("onShutdownSignals", () => {
  it("takes the copies of one press as one, and a later press as the force", () => {
    const { source, seen, send, now } = harness();
    const signals = onShutdownSignals({
      source,
      now,
      onStop: (signal) => seen.push(`stop ${signal}`),
      onForce: (signal) => seen.push(`force ${signal}`),
      onRepeat: (signal) => seen.push(`same press ${signal}`),
    });
    expect(seen).toEqual([]);
    send("SIGINT");
    // The terminal's SIGINT, then npm's and tsx's copies, milliseconds apart.
    send("SIGINT", 2);
    send("SIGINT", 3);
    expect(seen).toEqual(["stop SIGINT", "same press SIGINT", "same press SIGINT"]);
    // Still within the window, measured from the first press: a burst of copies does not stretch it.
    send("SIGINT", SAME_PRESS_MS - 6);
    expect(seen.at(-1)).toBe("same press SIGINT");
    send("SIGINT", 1);
    expect(seen.at(-1)).toBe("force SIGINT");
    send("SIGINT", 5_000);
    expect(seen.filter((line) => line.startsWith("force"))).toHaveLength(2);
    signals.dispose();
  });

  it("counts SIGTERM and SIGINT alike, and stops listening when disposed", () => {
    const { source, seen, send, now } = harness();
    const signals = onShutdownSignals({
      source,
      now,
      onStop: (signal) => seen.push(`stop ${signal}`),
      onForce: (signal) => seen.push(`force ${signal}`),
    });
    send("SIGTERM");
    send("SIGINT", 10);
    expect(seen).toEqual(["stop SIGTERM"]);
    send("SIGINT", SAME_PRESS_MS);
    expect(seen).toEqual(["stop SIGTERM", "force SIGINT"]);
    signals.dispose();
    expect(source.listenerCount("SIGINT") + source.listenerCount("SIGTERM")).toBe(0);
  });

  it("listens to the signals it is given only", () => {
    const { source, seen, send, now } = harness();
    const signals = onShutdownSignals({
      source,
      now,
      signals: ["SIGINT"],
      onStop: (signal) => seen.push(`stop ${signal}`),
      onForce: (signal) => seen.push(`force ${signal}`),
    });
    send("SIGTERM");
    expect(seen).toEqual([]);
    expect(source.listenerCount("SIGTERM")).toBe(0);
    signals.dispose();
  });

  it("gives the shell's exit status of a signal", () => {
    expect(signalExitCode("SIGINT")).toBe(130);
    expect(signalExitCode("SIGTERM")).toBe(143);
  });
});

describe("commandInterrupt", () => {
  it("ends a command that did not claim Ctrl-C at the first press", () => {
    const { source, send, now } = harness();
    const exits: number[] = [];
    const interrupt = commandInterrupt({ source, now, exit: (code) => exits.push(code) });
    send("SIGINT");
    expect(exits).toEqual([130]);
    interrupt.dispose();
  });

  it("aborts a claimed command's signal once per press; a later press ends the process", () => {
    const { source, send, now } = harness();
    const exits: number[] = [];
    let claimedPresses = 0;
    const interrupt = commandInterrupt({
      source,
      now,
      exit: (code) => exits.push(code),
      onClaimed: () => claimedPresses++,
    });
    const signal = interrupt.claim();
    send("SIGINT");
    send("SIGINT", 4);
    expect(signal.aborted).toBe(true);
    expect(claimedPresses).toBe(1);
    expect(exits).toEqual([]);
    // The command is still cancelling or printing (an API that does not answer): the user insists.
    send("SIGINT", SAME_PRESS_MS);
    expect(exits).toEqual([130]);
    interrupt.dispose();
    expect(source.listenerCount("SIGINT")).toBe(0);
  });
});
