/**
 * The contract between the engine and a task type. Built-in and user task types are both written
 * with `defineTask`, so a custom task type is one file.
 *
 * A task type's schemas are any zod's (`z.core.$ZodType`): the built-in types' are zod/mini
 * (domain/zod.ts), a user's are classic zod (`z.object(…)` from "zod"). The engine parses them with
 * their own `parse`/`safeParse` (`ownParse`/`ownSafeParse` of domain/zod.ts), which both flavours
 * have, as has any stand-in a task module may give (task-modules.ts only asks for those two).
 */
import type { WaitingKindName } from "../domain/records.js";
import type { TraceContext } from "../domain/trace.js";
import type { VarsOp, VarsResult } from "../domain/vars.js";
import type * as z from "../domain/zod.js";

export interface TaskContext {
  executionId: string;
  nodeId: string;
  attempt: number;
  /** Stable for one attempt of one node; send it to downstream systems to make effects idempotent. */
  idempotencyKey: string;
  /**
   * The attempt's W3C trace context (shared/domain/trace.ts): a child span of its execution's trace.
   * Send `traceparent` to downstream systems to join their spans to it (the `http` task does).
   * Always set by the engine; optional for contexts built elsewhere.
   */
  trace?: TraceContext;
  /** Fires when the execution is cancelled, the lease is lost or the node timeout passes. */
  signal: AbortSignal;
  /** Epoch milliseconds after which the attempt is aborted. */
  deadline: number;
  /** Waits `ms` on the engine's clock, ending early (with an AbortError) when `signal` fires. */
  sleep(ms: number): Promise<void>;
  now(): number;
  /**
   * The execution's variables, for the `vars` task type: given by the engine (inline, and by its own
   * worker), which applies the operation once per node (engine/vars.ts); not to external workers.
   */
  variables?: TaskVariables;
}

/** What a task run inside the engine may do to its execution's variables. */
export interface TaskVariables {
  /** Applies `op` once for this node (a repeat gives the first result again): its result. */
  apply(op: VarsOp): Promise<VarsResult>;
}

/** What `defer` is told besides the params. */
export interface DeferContext {
  /** The engine's clock when the node is queued, epoch ms. */
  now: number;
}

export interface TaskInput<P> {
  input: unknown;
  params: P;
  /** Outputs of the dependencies that had completed when this node became ready, keyed by node id. */
  deps: Record<string, unknown>;
  context: TaskContext;
}

export interface TaskType<P = unknown> {
  type: string;
  /** What a node's params must be; every run parses them with it (definitions stored long ago included). */
  params: z.core.$ZodType<P>;
  /**
   * Stricter rules a definition must pass when it is registered, checked instead of `params` there
   * (e.g. `http` refusing plain-text credentials and refused addresses). A definition stored before a
   * rule was added still runs: runs parse with `params`. Its issues become the definition's details.
   */
  registrationParams?: z.core.$ZodType;
  /** Runs inside the engine when the node becomes ready, with no queue hop and no lease (e.g. merge). */
  inline?: boolean;
  /**
   * The output is exactly `deps` (e.g. merge): an inline node with it is not run; the engine
   * composes its output from the dependencies' stored outputs, passing large ones by reference.
   */
  outputsDeps?: boolean;
  /**
   * A durable delay before the node may run, in ms (e.g. `wait`). The node is queued with a
   * not-before time and holds no worker meanwhile: the message is delayed by SQS (up to 15 minutes)
   * and longer waits are picked up by the sweeper when they come within reach. `params` are parsed,
   * with their expressions already evaluated over the node's scope when it is queued; `now` is the
   * engine's clock then (epoch ms), for a delay until a given time (never Date.now()). Zero or less
   * runs at once. Params the schema refuses, or a TerminalError thrown here (e.g. an ExpressionError
   * naming the param), queue the node at once: its run must refuse the same params (the engine's
   * parse does for the schema, as ExpressionError; `wait`'s run does for a time too far away).
   */
  defer?(params: P, context: DeferContext): number;
  /**
   * How long a run usually takes, in ms (`sleep`: its `ms`). The worker runs a ready node in the
   * invocation that readied it (continuation) only while twice this fits in the invocation's time
   * left (shared/engine/worker-time.ts); without it, the node's recent run times or 10 s are assumed.
   * A guess, never a limit: `timeoutSeconds` still bounds the run.
   */
  expectedMs?(params: P): number;
  /**
   * Run by the engine itself, holding no worker while what it started runs (engine/map.ts): `run`
   * is never called for such a type.
   */
  composite?: WaitingKindName;
  run(input: TaskInput<P>): Promise<unknown> | unknown;
}

export function defineTask<S extends z.core.$ZodType>(task: {
  type: string;
  params: S;
  registrationParams?: z.core.$ZodType;
  inline?: boolean;
  outputsDeps?: boolean;
  defer?(params: z.output<S>, context: DeferContext): number;
  expectedMs?(params: z.output<S>): number;
  composite?: WaitingKindName;
  run(input: TaskInput<z.output<S>>): Promise<unknown> | unknown;
}): TaskType<z.output<S>> {
  return task as TaskType<z.output<S>>;
}

export class TaskRegistry {
  private readonly types = new Map<string, TaskType>();

  constructor(tasks: Iterable<TaskType<unknown>> = []) {
    for (const task of tasks) this.register(task);
  }

  register(task: TaskType<unknown>): this {
    if (this.types.has(task.type)) throw new Error(`task type "${task.type}" is registered twice`);
    this.types.set(task.type, task);
    return this;
  }

  get(type: string): TaskType | undefined {
    return this.types.get(type);
  }

  has(type: string): boolean {
    return this.types.has(type);
  }

  names(): string[] {
    return [...this.types.keys()].sort();
  }

  /**
   * Takes every task type of `other` in place of its own, at once (`weft dev` reloading a changed
   * tasks folder): the engine holding this registry runs the new code from the next attempt on,
   * and an attempt already running keeps the task it got.
   */
  replaceWith(other: TaskRegistry): this {
    this.types.clear();
    for (const name of other.names()) this.types.set(name, other.get(name)!);
    return this;
  }
}
