/**
 * Periodic jobs of the local runtime (the seam where the sweeper plugs in, as an EventBridge schedule
 * invokes it in AWS). A job never overlaps itself; stop() waits for a running tick to finish.
 */
import type { Engine } from "../shared/engine/engine.js";
import type { EnginePorts } from "../shared/ports.js";

export interface LocalTimerContext {
  engine: Engine;
  ports: EnginePorts;
}

export interface LocalTimer {
  name: string;
  intervalMs: number;
  /** Run once right after start as well as every interval. Default false. */
  runAtStart?: boolean;
  tick(context: LocalTimerContext): Promise<void>;
}

export interface RunningTimers {
  stop(): Promise<void>;
}

export function startTimers(
  timers: readonly LocalTimer[],
  context: LocalTimerContext,
  onError: (error: unknown, timer: LocalTimer) => void = (error, timer) =>
    console.error(`[weft local] timer ${timer.name} failed:`, error),
): RunningTimers {
  let running = true;
  const handles = new Set<NodeJS.Timeout>();
  const ticking = new Set<Promise<void>>();

  const schedule = (timer: LocalTimer, delayMs: number) => {
    if (!running) return;
    const handle = setTimeout(() => {
      handles.delete(handle);
      const tick = (async () => {
        try {
          await timer.tick(context);
        } catch (error) {
          onError(error, timer);
        }
      })();
      ticking.add(tick);
      void tick.finally(() => {
        ticking.delete(tick);
        schedule(timer, timer.intervalMs);
      });
    }, delayMs);
    handles.add(handle);
  };

  for (const timer of timers) schedule(timer, timer.runAtStart ? 0 : timer.intervalMs);

  return {
    async stop() {
      running = false;
      for (const handle of handles) clearTimeout(handle);
      handles.clear();
      await Promise.all([...ticking]);
    },
  };
}
