/**
 * The built-in task types, each handler run recorded: the deadline the engine gave it, its worker
 * invocation's deadline (when the invocation has one), and how it ended. The world checks that no
 * attempt is given time past its invocation's deadline, and counts the runs that deadline cut. Each
 * run also holds its place in the audit log (how many writes were accepted before it started), so
 * the checker can tell that it belongs to a claimed attempt, and where it stands against a map's end.
 */
import { builtinTasks } from "../shared/tasks/builtins.js";
import { TaskRegistry, type TaskType } from "../shared/tasks/task-type.js";
import type { SimProcess } from "./scheduler.js";

export interface HandlerRun {
  executionId: string;
  nodeId: string;
  attempt: number;
  /** Virtual ms since the start, as the scheduler counts. */
  startedAt: number;
  /** The attempt's deadline (epoch ms, TaskContext.deadline). */
  deadline: number;
  /** The worker invocation's deadline (epoch ms), for an invocation that has one. */
  invocationDeadline?: number;
  /** The run's deadline is its invocation's: the invocation cut it short (its own timeout is later). */
  cut: boolean;
  endedAt?: number;
  /** Its signal had fired when it ended. */
  aborted?: boolean;
  /** How many writes the store had accepted when it started (the audit log's seq): its place among them. */
  seq?: number;
  /** The kind of process it ran in: "worker" (the Lambda worker) or "external" (an external worker). */
  process?: string;
  /** The id of the process it ran in (the audit names a write's process `p<id> …`). */
  processId?: number;
}

export function watchedTasks(
  running: () => SimProcess | undefined,
  now: () => number,
  invocationDeadlines: ReadonlyMap<number, number>,
  runs: HandlerRun[],
  seq?: () => number,
  /** Told of each run as it starts, before its handler (sim/limit-invariants.ts). */
  onStart?: (run: HandlerRun) => Promise<void>,
): TaskRegistry {
  const watch = (task: TaskType): TaskType =>
    task.inline
      ? task
      : {
          ...task,
          run: async (input) => {
            const proc = running();
            const invocationDeadline = proc === undefined ? undefined : invocationDeadlines.get(proc.id);
            const { context } = input;
            const run: HandlerRun = {
              executionId: context.executionId,
              nodeId: context.nodeId,
              attempt: context.attempt,
              startedAt: now(),
              deadline: context.deadline,
              ...(invocationDeadline === undefined ? {} : { invocationDeadline }),
              cut: invocationDeadline !== undefined && context.deadline === invocationDeadline,
              ...(seq ? { seq: seq() } : {}),
              ...(proc ? { process: proc.kind, processId: proc.id } : {}),
            };
            runs.push(run);
            if (onStart) await onStart(run);
            try {
              return await task.run(input);
            } finally {
              run.endedAt = now();
              run.aborted = context.signal.aborted;
            }
          },
        };
  return new TaskRegistry(builtinTasks.map(watch));
}
