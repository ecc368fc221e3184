/**
 * Process signals as a person means them: the first SIGINT/SIGTERM asks for a graceful stop, and a
 * second press, later, forces the exit. One module for every long-running command (`npm start` /
 * `weft dev`, `weft worker`, `weft run` and `weft watch`), so they all count presses alike.
 */
import { constants } from "node:os";

/**
 * How long after the first signal further ones count as the same press. A Ctrl-C in a terminal goes
 * to the whole foreground process group, and npm, npx and tsx forward it to their child as well, so
 * one press reaches the process two or three times within a few milliseconds. A person who means
 * to force the exit presses again after reading that the stop began, which takes longer than this;
 * a quick double-tap is taken as one press, and the next one forces. (Measured from the first
 * signal, so a burst of copies never stretches it.)
 */
export const SAME_PRESS_MS = 1000;

/** Where signals come from: `process`, or an EventEmitter in tests. */
export interface SignalSource {
  on(event: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(event: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface ShutdownSignalOptions {
  /** The first signal: stop gracefully (let running work finish). */
  onStop: (signal: NodeJS.Signals) => void;
  /** A signal after SAME_PRESS_MS: stop now. */
  onForce: (signal: NodeJS.Signals) => void;
  /** An echo of the first press, ignored (say so in a debug log, or nothing). */
  onRepeat?: (signal: NodeJS.Signals) => void;
  /** Default `process`. */
  source?: SignalSource;
  /** Default SIGINT and SIGTERM. */
  signals?: readonly NodeJS.Signals[];
  /** A monotonic clock in milliseconds. Default performance.now (wall-clock changes do not matter). */
  now?: () => number;
  /** Default SAME_PRESS_MS. */
  samePressMs?: number;
}

export interface ShutdownSignals {
  /** Stops listening. */
  dispose(): void;
}

/** Listens for `signals` and tells a first press from its echoes and from a second, later press. */
export function onShutdownSignals(options: ShutdownSignalOptions): ShutdownSignals {
  const source = options.source ?? process;
  const signals = options.signals ?? ["SIGINT", "SIGTERM"];
  const now = options.now ?? (() => performance.now());
  const samePressMs = options.samePressMs ?? SAME_PRESS_MS;
  let firstAt: number | undefined;
  const listener = (signal: NodeJS.Signals) => {
    const at = now();
    if (firstAt === undefined) {
      firstAt = at;
      options.onStop(signal);
    } else if (at - firstAt < samePressMs) {
      options.onRepeat?.(signal);
    } else {
      options.onForce(signal);
    }
  };
  for (const signal of signals) source.on(signal, listener);
  return {
    dispose() {
      for (const signal of signals) source.off(signal, listener);
    },
  };
}

/** The shell's exit status for a process ended by `signal`: 128 + its number (SIGINT 130, SIGTERM 143). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? constants.signals.SIGTERM);
}

/** Ctrl-C for a one-shot command (`weft run`, `weft watch`, `weft status`…). */
export interface CommandInterrupt {
  /**
   * Called by a command that handles Ctrl-C itself (it follows an execution it must not leave
   * silently): from then on the first press aborts the signal returned, and the command ends on its
   * own; a later press still ends the process at once. Before, or for a command that never claims
   * it, the first press ends the process at once.
   */
  claim(): AbortSignal;
}

/** No Ctrl-C at all: for a command run in-process (tests). */
export const NO_INTERRUPT: CommandInterrupt = { claim: () => new AbortController().signal };

/** SIGINT for a one-shot command: its echoes ignored, as for the long-running ones. */
export function commandInterrupt(options: {
  /** Ends the process (with 130). */
  exit: (code: number) => void;
  /** The first press reached a command that claimed it (say, move past the echoed `^C`). */
  onClaimed?: () => void;
  source?: SignalSource;
  now?: () => number;
}): CommandInterrupt & Pick<ShutdownSignals, "dispose"> {
  const controller = new AbortController();
  let claimed = false;
  const signals = onShutdownSignals({
    signals: ["SIGINT"],
    onStop: (signal) => {
      if (!claimed) return options.exit(signalExitCode(signal));
      options.onClaimed?.();
      controller.abort(new Error(`${signal} received`));
    },
    onForce: (signal) => options.exit(signalExitCode(signal)),
    ...(options.source === undefined ? {} : { source: options.source }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return {
    claim() {
      claimed = true;
      return controller.signal;
    },
    dispose: () => signals.dispose(),
  };
}
