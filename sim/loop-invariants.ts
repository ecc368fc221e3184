/**
 * `loop` nodes in the simulation (opt-in, WorldOptions.loops): worlds whose workflows carry loop
 * nodes over a small library workflow (`step`, or the child library's), each with a deterministic
 * number of iterations — `while: "{% $iteration < K %}"`, K drawn 1–4, and `maxIterations` drawn
 * 1–4, so that some loops use up their limit (LoopLimitExceeded) — an input built from `$iteration`
 * and `$previous`, sometimes a pause between iterations, and a `step` that fails on a drawn
 * iteration (ChildWorkflowFailed, retried as a new loop).
 *
 * The invariants of one execution's loop nodes (checkLoops), over the children the store holds:
 *  - every child of a loop node's attempt carries its iteration's key (domain/loop.ts iterationKey:
 *    the checker reads the key's parts itself); at most one child per (attempt, iteration), and an
 *    attempt's children are iterations 1..n with no gap [loop-iterations];
 *    the attempt's ChildStarted event (if any) names its first iteration;
 *  - an iteration k > 1 started only after iteration k−1 succeeded with `while` still true on it
 *    (k−1 < K, the checker's own reading of the rule), and never past maxIterations [loop-while];
 *    its input is the loop's input expression over `$iteration` = k and `$previous` = iteration
 *    k−1's output (handed to the child's own input check, rule `input`);
 *  - a COMPLETED loop's last attempt ran n ≤ maxIterations iterations, `while` false on the last
 *    (n ≥ K), and its output is `{output: <iteration n's output>, iterations: n}`; FAILED with
 *    LoopLimitExceeded only when n = maxIterations with `while` still true on a succeeded last
 *    iteration; with ChildWorkflowFailed only when its last iteration FAILED, with
 *    ChildWorkflowCancelled only when it was CANCELLED [loop-end];
 *  - no iteration is left running once its parent execution ended [loop-drained].
 * Its last attempt's iterations go to the reference (sim/reference.ts loopRun), which ends the node
 * as it ends a `workflow` node, so the rest of the DAG is checked as before.
 */
import { isDeepStrictEqual } from "node:util";
import type { NodeDefinition, WorkflowDefinition } from "../shared/domain/definition.js";
import type { ExecutionRecord, NodeRecord } from "../shared/domain/records.js";
import { isTerminalExecution } from "../shared/domain/states.js";
import type { Engine } from "../shared/engine/engine.js";
import { Payloads } from "../shared/engine/payloads.js";
import type { BlobStore } from "../shared/ports.js";
import type { GeneratedWorkflow } from "./dag.js";
import type { Rng } from "./prng.js";
import { type ChildEnd, evaluateExpression, type LoopEnd, whileRule } from "./reference.js";

/** The library workflow most loops run: it echoes its iteration, and fails on the drawn one. */
export const STEP_WORKFLOW = "step";

/**
 * `step`: outputs `{"n0-pass": input.i}`; its `n1-fail` runs (and fails the execution for good)
 * when `input.i = input.f`, so a loop drawn with f = 2 fails on its second iteration.
 */
export function stepWorkflow(): GeneratedWorkflow {
  return {
    definition: {
      name: STEP_WORKFLOW,
      defaults: { retry: { maxAttempts: 1 } },
      nodes: [
        { id: "n0-pass", type: "pass", params: { value: "{% input.i %}" } },
        {
          id: "n1-fail",
          type: "fail",
          when: "{% input.i = input.f %}",
          params: { retryable: false, message: "the step failed on its drawn iteration" },
        },
      ],
    },
    input: { i: 1, f: 0 },
  };
}

/** A loop node after `parent` (or an entry), over `name`, its counts drawn from `rng`. */
function loopNode(id: string, parent: string | undefined, name: string, rng: Rng): NodeDefinition {
  const stopsAfter = rng.int(1, 4);
  const maxIterations = rng.int(1, 4);
  const failsOn = rng.chance(0.25) ? rng.int(1, 4) : 0;
  const input = rng.chance(0.5)
    ? `{% {"i": $iteration, "f": ${failsOn}, "prev": $previous} %}`
    : `{% {"i": $iteration, "f": ${failsOn}, "seen": $exists($previous)} %}`;
  const pause = rng.int(0, 9);
  const intervalSeconds =
    pause < 3 ? rng.int(1, 30) : pause === 3 ? `{% $iteration * ${rng.int(1, 10)} %}` : undefined;
  const node: NodeDefinition = {
    id,
    type: "loop",
    ...(parent === undefined ? {} : { dependsOn: [parent] }),
    params: {
      workflow: { name, input },
      while: `{% $iteration < ${stopsAfter} %}`,
      maxIterations,
      ...(intervalSeconds === undefined ? {} : { intervalSeconds }),
    },
  };
  if (rng.chance(0.3)) node.retry = { maxAttempts: 2, backoff: { initialSeconds: 0.5, maxSeconds: 2 } };
  return node;
}

/**
 * `definition` with 1–2 loop nodes, each after a node drawn from it (or an entry), over `step` or
 * (now and then) one of `callees`; half of them with a `pass` after, so a loop's output flows on.
 */
export function withLoopNodes(
  definition: WorkflowDefinition,
  rng: Rng,
  callees: readonly string[],
): WorkflowDefinition {
  const ids = definition.nodes.map((node) => node.id);
  const added: NodeDefinition[] = [];
  const count = rng.int(1, 2);
  for (let i = 0; i < count; i++) {
    const id = `l${i}-loop`;
    const parent = rng.chance(0.2) ? undefined : rng.pick(ids);
    const name = callees.length > 0 && rng.chance(0.25) ? rng.pick(callees) : STEP_WORKFLOW;
    added.push(loopNode(id, parent, name, rng));
    if (rng.chance(0.5))
      added.push({ id: `l${i}-after`, type: "pass", dependsOn: [id], params: { value: "{% deps %}" } });
  }
  return { ...definition, nodes: [...definition.nodes, ...added] } as WorkflowDefinition;
}

export type LoopCount = "loopsCompleted" | "loopIterations" | "loopLimitExceeded" | "loopsChildFailed";

export interface LoopCheck {
  blobs: BlobStore;
  engine: Engine;
  execution: ExecutionRecord;
  definition: WorkflowDefinition;
  records: ReadonlyMap<string, NodeRecord>;
  /** Every execution by id. */
  byId: ReadonlyMap<string, ExecutionRecord>;
  /** Children by their parent's node attempt, `<parent>/<node>/<attempt>`. */
  byLink: ReadonlyMap<string, readonly string[]>;
  /** The child each node attempt's ChildStarted event names, by `<parent>/<node>/<attempt>`. */
  started: ReadonlyMap<string, string>;
  /** Where the expected input of each iteration's child goes, by the child's id. */
  inputs: Map<string, { value: unknown }>;
  counts: Record<LoopCount, number>;
  v: (rule: string, message: string, nodeId?: string) => void;
}

/** The checker's own reading of an iteration's key: `loop:<parent>:<node>:<attempt>:<iteration>`. */
function iterationOf(key: string | undefined, parentId: string, nodeId: string, attempt: number) {
  const prefix = `loop:${parentId}:${nodeId}:${attempt}:`;
  if (key === undefined || !key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  return /^[1-9]\d*$/.test(rest) ? Number(rest) : undefined;
}

/** The loop invariants of one execution's loop nodes (above); its loops' last attempts, for the reference. */
export async function checkLoops(c: LoopCheck): Promise<Map<string, LoopEnd>> {
  const ends = new Map<string, LoopEnd>();
  const id = c.execution.executionId;
  const loader = new Payloads(c.blobs);
  const outputs = new Map<string, unknown>();
  /** A SUCCEEDED child's output, as the engine's view gives it (what its parent's node adopted). */
  const outputOf = async (child: ExecutionRecord) => {
    if (!outputs.has(child.executionId)) {
      const view = await c.engine.describeExecution(child.executionId).catch(() => undefined);
      outputs.set(child.executionId, view?.output ?? null);
    }
    return outputs.get(child.executionId);
  };
  for (const node of c.definition.nodes) {
    if (node.type !== "loop") continue;
    const record = c.records.get(node.id);
    if (!record) continue;
    const params = (node.params ?? {}) as {
      workflow?: { input?: unknown };
      while?: unknown;
      maxIterations?: number;
    };
    const stopsAfter = whileRule(params.while);
    const maxIterations = params.maxIterations ?? Number.POSITIVE_INFINITY;
    const nv = (rule: string, message: string) => c.v(rule, message, node.id);
    let last: { n: number; child: ExecutionRecord } | undefined;
    for (let attempt = 1; attempt <= record.attempt; attempt++) {
      const byIteration = new Map<number, ExecutionRecord>();
      for (const childId of c.byLink.get(`${id}/${node.id}/${attempt}`) ?? []) {
        const child = c.byId.get(childId);
        if (!child) continue;
        c.counts.loopIterations++;
        const k = iterationOf(child.idempotencyKey, id, node.id, attempt);
        if (k === undefined) {
          nv(
            "loop-iterations",
            `attempt ${attempt}'s child ${childId} has key ${child.idempotencyKey}, no iteration's`,
          );
          continue;
        }
        const twin = byIteration.get(k);
        if (twin)
          nv(
            "loop-iterations",
            `attempt ${attempt} started two children for iteration ${k}: ${twin.executionId}, ${childId}`,
          );
        else byIteration.set(k, child);
        if (isTerminalExecution(c.execution.status) && !isTerminalExecution(child.status))
          nv(
            "loop-drained",
            `iteration ${k} of attempt ${attempt} (${childId}) is ${child.status} after its parent ended ${c.execution.status}`,
          );
      }
      const n = Math.max(0, ...byIteration.keys());
      // The history names the first iteration alone (ChildStarted, when the attempt began waiting).
      const named = c.started.get(`${id}/${node.id}/${attempt}`);
      if (named !== undefined && named !== byIteration.get(1)?.executionId)
        nv("loop-iterations", `attempt ${attempt}'s ChildStarted names ${named}, not its first iteration`);
      for (let k = 1; k <= n; k++) {
        const child = byIteration.get(k);
        if (!child) {
          nv("loop-iterations", `attempt ${attempt} ran iterations up to ${n}, but none ${k}`);
          continue;
        }
        if (k > maxIterations)
          nv("loop-while", `attempt ${attempt} started iteration ${k}, past maxIterations ${maxIterations}`);
        const before = byIteration.get(k - 1);
        const bindings: Record<string, unknown> = { iteration: k };
        if (k > 1) {
          if (before && before.status !== "SUCCEEDED")
            nv(
              "loop-while",
              `attempt ${attempt} started iteration ${k} though iteration ${k - 1} ended ${before.status}`,
            );
          if (stopsAfter !== undefined && k - 1 >= stopsAfter)
            nv(
              "loop-while",
              `attempt ${attempt} started iteration ${k} though its while was false after iteration ${k - 1}`,
            );
          if (before?.status === "SUCCEEDED") bindings.previous = await outputOf(before);
        }
        // The child's input: its `input` check (invariants.ts) compares it with this.
        const input = params.workflow?.input;
        if (typeof input === "string" && (k === 1 || bindings.previous !== undefined)) {
          const value = await evaluateExpression(input, {}, bindings);
          if (!("error" in value)) c.inputs.set(child.executionId, { value: value.value ?? null });
        } else if (typeof input !== "string") c.inputs.set(child.executionId, { value: input ?? null });
      }
      const lastChild = byIteration.get(n);
      if (attempt === record.attempt && lastChild) last = { n, child: lastChild };
    }
    let lastEnd: ChildEnd | undefined;
    if (last) {
      const output = last.child.status === "SUCCEEDED" ? await outputOf(last.child) : undefined;
      lastEnd = {
        executionId: last.child.executionId,
        status: last.child.status,
        ...(output !== undefined ? { output } : {}),
      };
      ends.set(node.id, { iterations: last.n, last: lastEnd });
    }
    const n = last?.n ?? 0;
    const status = lastEnd?.status ?? "(none)";
    const error = record.error?.name;
    if (record.status === "COMPLETED") {
      c.counts.loopsCompleted++;
      if (lastEnd?.status !== "SUCCEEDED")
        nv("loop-end", `COMPLETED, but its last attempt's last iteration (${n}) is ${status}`);
      if (stopsAfter !== undefined && n < stopsAfter)
        nv(
          "loop-end",
          `COMPLETED after ${n} iterations, though its while still held (it stops after ${stopsAfter})`,
        );
      if (n > maxIterations)
        nv("loop-end", `COMPLETED after ${n} iterations, past maxIterations ${maxIterations}`);
      const stored =
        record.output === undefined ? undefined : await loader.load(record.output).catch(() => undefined);
      const expected = { output: lastEnd?.output ?? null, iterations: n };
      if (!isDeepStrictEqual(plain(stored), plain(expected)))
        nv(
          "loop-end",
          `output ${JSON.stringify(stored)}, but its last iteration gives ${JSON.stringify(expected)}`,
        );
    }
    if (record.status === "FAILED" && error === "LoopLimitExceeded") {
      c.counts.loopLimitExceeded++;
      if (
        n !== maxIterations ||
        lastEnd?.status !== "SUCCEEDED" ||
        stopsAfter === undefined ||
        n >= stopsAfter
      )
        nv(
          "loop-end",
          `failed with LoopLimitExceeded after ${n} iterations (last ${status}), maxIterations ${maxIterations}, while true below ${stopsAfter}`,
        );
    }
    if (record.status === "FAILED" && error === "ChildWorkflowFailed") {
      c.counts.loopsChildFailed++;
      if (lastEnd?.status !== "FAILED")
        nv("loop-end", `failed with ChildWorkflowFailed, but its last iteration (${n}) is ${status}`);
    }
    if (record.status === "FAILED" && error === "ChildWorkflowCancelled" && lastEnd?.status !== "CANCELLED")
      nv("loop-end", `failed with ChildWorkflowCancelled, but its last iteration (${n}) is ${status}`);
  }
  return ends;
}

/** Plain JSON, so that two values compare by content alone. */
function plain(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
