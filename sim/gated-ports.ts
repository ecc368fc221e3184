/**
 * Turns every port call into a yield point: a Proxy whose methods first await the scheduler's gate,
 * then (by a seeded fault) may fail before the call has any effect, or after it took effect with the
 * answer lost — what a throttled or timed-out AWS call looks like to the caller.
 */
import type { Rng } from "./prng.js";
import type { Scheduler } from "./scheduler.js";

export interface PortFaults {
  rng: Rng;
  /** Chance that a call fails with no effect. */
  before: number;
  /** Chance that a call takes effect but its caller sees an error. */
  after: number;
  stats: { before: number; after: number };
}

export class TransientPortError extends Error {
  override name = "TransientPortError";
}

export type Describe = (method: string, args: readonly unknown[]) => string;

export function gatePort<T extends object>(
  target: T,
  port: string,
  scheduler: Scheduler,
  faults?: PortFaults,
  describe: Describe = () => "",
  /** Called as a call is made; what it returns, once the call's gate opens (AuditStore.issuedBefore). */
  onCall?: () => () => void,
): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value: unknown = Reflect.get(object, property, receiver);
      if (typeof value !== "function") return value;
      const method = String(property);
      return async (...args: unknown[]) => {
        const opened = onCall?.();
        await scheduler.gate(`${port}.${method}${describe(method, args)}`);
        opened?.();
        const active = scheduler.active && faults !== undefined;
        if (active && faults.rng.chance(faults.before)) {
          faults.stats.before++;
          throw new TransientPortError(`${port}.${method} failed (injected, no effect)`);
        }
        const result: unknown = await (value as (...a: unknown[]) => unknown).apply(object, args);
        if (active && faults.rng.chance(faults.after)) {
          faults.stats.after++;
          throw new TransientPortError(`${port}.${method} failed (injected, after its effect)`);
        }
        return result;
      };
    },
  });
}

/** Short, readable arguments of store calls for the trace. */
export const describeStoreCall: Describe = (method, args) => {
  const [a, b, c, d] = args as [unknown, unknown, unknown, unknown];
  switch (method) {
    case "transitionNode": {
      const condition = c as { status: string[]; attempt?: number };
      const patch = d as { status?: string; attempt?: number; lease?: unknown };
      const to = patch.status ?? (patch.lease ? "lease" : "patch");
      return ` ${a}/${b} [${condition.status.join("|")}${condition.attempt ? `#${condition.attempt}` : ""}]→${to}`;
    }
    case "recordArrival": {
      const r = a as { executionId: string; childId: string; parentIndex: number; outcome: string };
      return ` ${r.executionId}/${r.childId} from ${r.parentIndex} ${r.outcome}`;
    }
    case "transitionExecution": {
      const patch = c as { status?: string };
      return ` ${a} [${(b as string[]).join("|")}]→${patch.status ?? "patch"}`;
    }
    case "getNode":
      return ` ${a}/${b}`;
    case "takeTask": {
      const take = a as {
        task: { executionId: string; nodeId: string; attempt: number };
        workerId: string;
        workerVersion: number;
      };
      return ` ${take.task.executionId}/${take.task.nodeId}#${take.task.attempt} by ${take.workerId} v${take.workerVersion}`;
    }
    case "offerTask":
    case "withdrawTask": {
      const task = a as { pool: string; executionId: string; nodeId: string; attempt: number };
      return ` ${task.pool} ${task.executionId}/${task.nodeId}#${task.attempt}`;
    }
    case "releaseHold":
      return ` ${a} ${b}`;
    case "putWorker":
      return ` ${(a as { workerId: string }).workerId}`;
    default:
      return typeof a === "string" ? ` ${a}` : "";
  }
};

/** Blob calls for the trace: `ex1/1a2b3c4d` (the execution and the start of the content hash). */
export const describeBlobCall: Describe = (method, args) => {
  const [key, text] = args as [unknown, unknown];
  if (typeof key !== "string") return "";
  const short = key.replace(/^ex\/([^/]+)\/([0-9a-f]{8})[0-9a-f]*\.json$/, "$1/$2");
  return method === "put" && typeof text === "string"
    ? ` ${short} (${Buffer.byteLength(text, "utf8")} B)`
    : ` ${short}`;
};
