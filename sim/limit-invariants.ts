/**
 * Concurrency limits in the simulation (engine/slots.ts): worlds whose workflows put `concurrency`
 * on some of their handler-run nodes — a literal key or none, a limit of 1 or 2, per workflow or
 * global — and the invariant that no more than `limit` attempts of a key run at once
 * [concurrency-limit], whatever the duplicate deliveries, crashes, stalls and redrives of the world.
 *
 * "Run" is a handler running for an attempt that still holds its claim: its node RUNNING at that
 * attempt with its lease not passed. A stalled process's handler that outlived its lease (a zombie)
 * holds nothing any more — its slot is stale, and the attempt after it may take it — so it is not
 * counted. The count is taken each time a handler starts (the only moment it grows). That every
 * waiter is granted in the end is the world's own check that every execution ends.
 */
import type { WorkflowDefinition } from "../shared/domain/definition.js";
import { type ConcurrencyLimit, concurrencyLimits, slotKeyOf } from "../shared/domain/slots.js";
import type { Store } from "../shared/ports.js";
import type { Violation } from "./invariants.js";
import type { Rng } from "./prng.js";
import type { HandlerRun } from "./watched-tasks.js";

/** Node types the simulation's workflows run in a handler (a limit on another type is refused). */
const HANDLER_TYPES = new Set(["pass", "noop", "fail", "sleep"]);

/** `definition` with limits on some of its handler-run nodes (none on external ones). */
export function withConcurrencyLimits(definition: WorkflowDefinition, rng: Rng): WorkflowDefinition {
  const nodes = definition.nodes.map((node) => {
    if (!HANDLER_TYPES.has(node.type) || node.runsOn !== undefined || !rng.chance(0.7)) return node;
    // Few keys and small limits, shared across nodes and workflows (global): contention is the point.
    const limit = (): ConcurrencyLimit => {
      const global = rng.chance(0.5);
      const key = global || rng.chance(0.7) ? (rng.chance(0.8) ? "k0" : "k1") : undefined;
      // A global key has one limit wherever it is named (k0: 1, k1: 2): with different limits for one
      // key, each node is admitted while fewer than its own hold it, which no count of runs can check.
      const size = global ? (key === "k0" ? 1 : 2) : rng.chance(0.7) ? 1 : 2;
      return {
        ...(key === undefined ? {} : { key }),
        limit: size,
        ...(global ? { scope: "global" as const } : {}),
      };
    };
    const concurrency = rng.chance(0.2) ? [limit(), limit()] : limit();
    // A limited `noop` or `pass` mostly takes a while (a `sleep`), so limited attempts overlap and
    // wait for slots; the checker reads the definitions as drawn here.
    if ((node.type === "noop" || node.type === "pass") && rng.chance(0.8))
      return { ...node, type: "sleep", params: { ms: rng.int(500, 3_000) }, concurrency };
    return { ...node, concurrency };
  });
  return { ...definition, nodes } as WorkflowDefinition;
}

/** The slot keys and limits of a node of a definition (its keys are literals here). */
function limitsOf(definition: WorkflowDefinition, nodeId: string): Array<{ slotKey: string; limit: number }> {
  const node = definition.nodes.find((n) => n.id === nodeId);
  return concurrencyLimits(node?.concurrency).map((limit, i) => ({
    slotKey: slotKeyOf(limit, definition.name, nodeId, i, limit.key ?? ""),
    limit: limit.limit,
  }));
}

/**
 * Watches handler runs as they start: `onStart` counts the runs of each of the node's slot keys that
 * still hold their claim, and records a violation past the limit.
 */
export class LimitWatch {
  readonly violations: Violation[] = [];
  /** Handler runs by slot key, while their handler runs. */
  private readonly running = new Map<string, Set<HandlerRun>>();
  /**
   * Each run's claim: the lease token its node held as it started (its claim is written just
   * before). Attempt numbers repeat after a redrive, so a zombie of an earlier life is told from the
   * attempt of the same number that holds the claim now by its token.
   */
  private readonly claims = new WeakMap<HandlerRun, string>();
  /** Starts checked, and the most runs of one key seen at once. */
  readonly stats = { limitedRuns: 0, mostAtOnce: 0 };

  constructor(
    private readonly store: Store,
    private readonly workflowOf: (executionId: string) => string | undefined,
    private readonly definitions: ReadonlyMap<string, WorkflowDefinition>,
    private readonly now: () => number,
  ) {}

  async onStart(run: HandlerRun): Promise<void> {
    const workflow = this.workflowOf(run.executionId);
    const definition = workflow === undefined ? undefined : this.definitions.get(workflow);
    if (!definition) return;
    const limits = limitsOf(definition, run.nodeId);
    if (limits.length === 0) return;
    this.stats.limitedRuns += 1;
    const own = await this.store.getNode(run.executionId, run.nodeId);
    if (own?.status === "RUNNING" && own.attempt === run.attempt && own.lease)
      this.claims.set(run, own.lease.token);
    // A zombie's handler starting (a stalled process past its lease) holds no claim: it neither
    // counts nor is checked — its slot may be another's by now.
    if (!(await this.holdsClaim(run))) return;
    for (const { slotKey, limit } of limits) {
      const set = this.running.get(slotKey) ?? new Set<HandlerRun>();
      this.running.set(slotKey, set);
      let live = 1;
      const others: string[] = [];
      for (const other of set) {
        // A node may name one global key twice: its run is counted once.
        if (other === run) continue;
        if (other.endedAt !== undefined) {
          set.delete(other);
          continue;
        }
        if (await this.holdsClaim(other)) {
          live += 1;
          others.push(`${other.executionId}/${other.nodeId}#${other.attempt} since ${other.startedAt}`);
        }
      }
      set.add(run);
      this.stats.mostAtOnce = Math.max(this.stats.mostAtOnce, live);
      if (live > limit)
        this.violations.push({
          rule: "concurrency-limit",
          executionId: run.executionId,
          nodeId: run.nodeId,
          message: `attempt ${run.attempt} started at ${run.startedAt} while ${live - 1} other attempts of slot key "${slotKey}" ran (limit ${limit}): ${others.join(", ")}`,
        });
    }
  }

  /** Whether a run still holds its claim: its node RUNNING under the run's lease, not passed. */
  private async holdsClaim(run: HandlerRun): Promise<boolean> {
    const record = await this.store.getNode(run.executionId, run.nodeId);
    return (
      record?.status === "RUNNING" &&
      record.lease !== undefined &&
      record.lease.token === this.claims.get(run) &&
      record.lease.expiresAt > this.now()
    );
  }
}
