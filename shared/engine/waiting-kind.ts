/**
 * The engine's waiting kinds in one shape (docs/architecture.md, "Waiting kinds"): a node whose
 * claimed attempt waits holding no worker — for its items (`map`), its child execution (`workflow`),
 * a settlement (`callback`) — its lease the time of its next check, its deadline a timer. The worker
 * starts it and hands it every check (its own timer's message, a word from what it waits for, the
 * sweeper's look once its check time passed, a redelivery); the propagation releases what it holds
 * when its execution ends. Each kind is one file implementing this (map.ts, children.ts,
 * callbacks.ts), registered in WaitingKinds (worker.ts) under the name its task type gives as
 * `composite` (tasks/task-type.ts) and its waiting state carries as `kind` (domain/records.ts): a new
 * kind is a new file, not edits across the engine.
 *
 * The other waits are not attempts: a `wait` node and a retry's backoff are QUEUED with a not-before
 * time, an external task is QUEUED until a worker takes it; all of them, and these, come due through
 * one timer (send.ts, timers.ts) and are found by the sweeper only when due (sweeper.ts).
 */
import type { GraphNode, WorkflowGraph } from "../domain/graph.js";
import type {
  CompositeState,
  ExecutionRecord,
  Lease,
  NodeRecord,
  WaitingKindName,
} from "../domain/records.js";

/** A claimed attempt of a waiting kind's node, about to wait. */
export interface WaitingStart {
  execution: ExecutionRecord;
  graph: WorkflowGraph;
  node: GraphNode;
  record: NodeRecord;
  lease: Lease;
  /** A map item's `$item` and `$index`, when the node is a map's item (a map over a workflow). */
  bindings?: Record<string, unknown>;
}

/** A look at a waiting node (RUNNING, its state of this kind, as `record` holds it). */
export interface WaitingCheck {
  execution: ExecutionRecord;
  graph: WorkflowGraph;
  node: GraphNode;
  record: NodeRecord;
  /**
   * The look is the sweeper's or a redelivery, which may follow a handling that died between its
   * waiting write and arming its timer: a kind that arms its own timer arms it again.
   */
  recheck: boolean;
}

export interface WaitingKind<K extends WaitingKindName = WaitingKindName> {
  readonly kind: K;
  /**
   * It arms a timer for its own check time (a callback's timeout and heartbeat deadline), so the
   * sweeper need not look at it; without, the sweeper looks once its check time passed, the backstop
   * for a word lost to a crash (sweeper.ts).
   */
  readonly ownTimer: boolean;
  /** The attempt begins to wait (fenced on its lease, refused once told to stop), or fails by policy. */
  start(attempt: WaitingStart): Promise<void>;
  /**
   * Settles it when what it waits for is done (completed, or failed by its retry policy), times it
   * out past its deadline, or leaves it waiting until its next check. Any number of copies may come:
   * each write is fenced on the attempt's lease.
   */
  check(look: WaitingCheck): Promise<void>;
  /** Releases what it started, its attempt cancelled while it waited (a child execution: cancelled). */
  release?(state: Extract<CompositeState, { kind: K }>, reason: string): Promise<void>;
}

/** The kinds an engine runs, by name. */
export class WaitingKinds {
  private readonly kinds = new Map<WaitingKindName, WaitingKind>();

  constructor(kinds: Iterable<WaitingKind>) {
    for (const kind of kinds) {
      if (this.kinds.has(kind.kind)) throw new Error(`waiting kind "${kind.kind}" is registered twice`);
      this.kinds.set(kind.kind, kind);
    }
  }

  get(name: WaitingKindName): WaitingKind {
    const kind = this.kinds.get(name);
    if (!kind) throw new Error(`no waiting kind "${name}" is registered`);
    return kind;
  }

  /** Whether a node waiting in `state` arms its own timer (the sweeper's look can skip it). */
  armsOwnTimer(state: CompositeState): boolean {
    return this.get(state.kind).ownTimer;
  }

  /** Releases what a node waiting in `state` started (its attempt cancelled). */
  release(state: CompositeState, reason: string): Promise<void> {
    const kind = this.get(state.kind) as WaitingKind<typeof state.kind>;
    return kind.release?.(state, reason) ?? Promise.resolve();
  }
}
