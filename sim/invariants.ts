/**
 * The invariants checked after every run, from the final store state, each execution's history,
 * and the audit log of accepted writes (in true write order):
 *
 *  - every execution reaches a terminal state, and terminal states never change (executions and nodes;
 *    SKIPPED is terminal like COMPLETED, FAILED and CANCELLED); each node that ended has exactly one
 *    terminal event (NodeCompleted | NodeFailed | NodeCancelled | NodeSkipped) in its life, the one
 *    of its status [terminal-event];
 *  - no node completes twice; each child is queued once (≤ 1 NodeQueued), each attempt starts and is
 *    retried at most once; each parent arrives at each child at most once;
 *  - a fan-in never fires before its condition (okDeps ≥ required when it leaves PENDING for QUEUED,
 *    or for COMPLETED when inline; every ok arrival follows its parent's completion — or its
 *    failure under `onError: "continue"`; for `all`, every parent not among its inputs was skipped
 *    before) nor more than once;
 *  - no write from a superseded attempt is accepted (fenced writes match the live token and attempt;
 *    no event of attempt k after attempt k+1 began; the completed attempt is the last one);
 *  - node status changes follow the state machine (SKIPPED only from PENDING, QUEUED or RUNNING);
 *  - every completed node's output, and a SUCCEEDED execution's output, equal the reference evaluator's
 *    once resolved (payloads loaded from the blob store), and the execution's input resolves to
 *    exactly what its client sent (-0, ±Infinity and "__proto__" keys included); `{% %}` params
 *    are mapped as the reference evaluates them with jsonata itself [output];
 *  - a SKIPPED node's handler never ran (no handler run recorded for it, no NodeCompleted) and its
 *    record holds no output [skipped-ran];
 *  - skips as the reference decides them [skip]: a node ends SKIPPED only when its `when` gave false
 *    or undefined over the deps it saw, when every parent of an `all` fan-in was skipped, or when
 *    skips made an `any`/`count:N` fan-in unmeetable; such a node never runs (COMPLETED or FAILED),
 *    and a `when` that gives another value fails the node with ExpressionError [expression];
 *  - skips and continued failures never fail or cancel an execution: one that nobody asked to
 *    cancel, not redriven, where no node failed for good under `onError: "fail"`, ends SUCCEEDED, and
 *    none of its nodes is cancelled while it runs [clean-succeeds];
 *  - the dependants of a node that failed under `onError: "continue"` saw `{error: {name, message}}`
 *    for it — its record's error — in their deps (merge outputs, params expressions) [continue-deps];
 *  - payloads: every blob any accepted payload refers to (inputs and outputs, through `parts`) is in
 *    the blob store with exactly its `bytes`, its text hashes to its `sha256`, and its key is that
 *    hash under its execution's prefix (content addressing);
 *  - payloads take the form the inline threshold gives them (Payloads.saveJson / compose): inline
 *    text is at most `inlineBytes` bytes and a blob more; `parts` only as the output of a node that
 *    composes its dependencies (merge), keeping at least one member that is not inline, no wider
 *    than `maxPartsBytes` stored, its members exactly its dependencies' stored outputs (a
 *    continue-failed one's: its {error}) — a composition of inline members only is joined into one
 *    text and held to the threshold like any value; and the stored form decodes to the payload it
 *    encodes;
 *  - an execution ends CANCELLED only when cancelled, FAILED only with a node that failed for good
 *    under `onError: "fail"` (attempts exhausted, non-retryable, an ExpressionError, dead-lettered),
 *    and such a node that failed while its execution ran ends that execution FAILED (or CANCELLED by a
 *    racing request); a SUCCEEDED execution's sinks are each COMPLETED, SKIPPED or continue-failed;
 *  - the store's history holds exactly the events of the accepted writes; every status change has
 *    its event, every node of an ended execution ended with one, and the history lists them in
 *    causal order (sim/history-order.ts) [transition-event, node-event, history-order,
 *    history-causal];
 *  - idempotency keys (per workflow): at most one execution per (workflow, key), each of a key a
 *    client created with; every answer to a client's creates names that one execution; a create
 *    with the key but another input or start flag is refused (never answered with an execution,
 *    so it never creates one), and the same request never is;
 *  - every handler run (a node's or a map item's) belongs to an attempt whose claim (NodeStarted)
 *    was accepted before the run began — but a first attempt in the Lambda worker (not a map
 *    item's) when the engines claim lazily, whose claim rides its first write [handler-claimed];
 *  - maps (checkMaps below): each item's life follows the state machine, fenced, with one start
 *    per attempt, at most one completion and one terminal event of its status; every item of a
 *    COMPLETED map's attempt ended COMPLETED or FAILED, exactly the items of its list
 *    [map-item-once]; no item is written before its map attempt's waiting write, item j ≥ lanes is
 *    claimed only once item j − lanes ended, and never more than `lanes` items of one map attempt
 *    are RUNNING at once in true write order [map-concurrency]; an item claimed after its map
 *    attempt ended never runs its handler nor completes (items claimed before the end may finish
 *    after it) [map-ended]; a map ends as the reference decides from its items — COMPLETED with
 *    their outputs in item order, tolerated failures as {error}, the NodeCompleted detail
 *    {items, failed} — or FAILED with MapFailed only once more items failed than tolerated, each
 *    item's output the reference's [map-output, map-tolerance]; a SKIPPED map has no items
 *    [skipped-ran]; items' outputs and the chunks of a map's list are stored as any payload.
 *
 *  - child executions (checkChildren below): a child is linked to an existing parent one level
 *    up, never deeper than the limit, the only child of its parent's node attempt [child-link,
 *    child-depth, child-once]; its input is what its parent's node (or item) mapped, as the
 *    reference evaluates it [child-input]; a `workflow` node completes only with its last attempt's
 *    child SUCCEEDED and with that child's output, and fails with its child's end
 *    [child-end, output]; a child ends CANCELLED only when a client asked, or when its parent's
 *    node no longer waited for it (it ended otherwise, moved to a later attempt, or the parent was
 *    asked to stop) [cancel]; children are checked after their parents, and the keys rule holds
 *    for clients' executions only (a child's key is its parent attempt's).
 *
 *  - external workers and callbacks (checkExternals below; sim/externals.ts drives them): every
 *    write a worker's task call (heartbeat, complete, fail) made to its task's node was to the
 *    attempt the token names, RUNNING under the token's lease — held by that worker — and fenced on
 *    that token [external-fence]; every claim of a node placed with `runsOn` is a worker's,
 *    registered at that moment (the audit's log of registrations) and satisfying the placement as
 *    the checker restates it (pool, executors, capabilities, labels, allowed and forbidden
 *    workers), a node not placed is never claimed by a worker, a placed one never by the Lambda
 *    worker, and every handler run is in a process of the right kind [placement]; replaying claims
 *    and ends in true write order, no worker runs more attempts at once than its registration's
 *    maxParallel, nor more of one node (across executions) than the node's maxParallelPerWorker
 *    [worker-limits]; every write a callback settler's call made was to the waiting attempt its
 *    token names, fenced on it, a callback completes only by its settler's completion with the
 *    token of that attempt, and no attempt is answered as settled twice [callback-once]; a
 *    settlement answered as accepted was written [callback-answer], and so was a worker's report
 *    answered as accepted [report-answer]. A callback node ends as its
 *    settler ended its last attempt (the reference takes what the settler sent), or times out.
 *
 * The history compared with the accepted writes includes the map items' events.
 *
 * Warnings (reported, not failures): nodes left QUEUED or RUNNING in a finished execution, map
 * items left so after their map attempt and execution ended [leftover-item], and a child that no
 * attempt waited for (its attempt lost between starting it and recording it) which ended by itself
 * before the sweeper cancelled it [orphan-child].
 */

import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { WorkflowDefinition } from "../shared/domain/definition.js";
import { requiredCompletions } from "../shared/domain/fan-in.js";
import { FAN_OUT_LIMITS, type FanOutLimits } from "../shared/domain/fan-out.js";
import {
  compileGraph,
  type GraphNode,
  ON_FAILURE_NODE_ID,
  type WorkflowGraph,
} from "../shared/domain/graph.js";
import { parseMapItemId } from "../shared/domain/map.js";
import {
  blobKey,
  blobsOf,
  decodeStoredPayload,
  encodeStoredPayload,
  type Payload,
  storedBytes,
} from "../shared/domain/payload.js";
import type { RunsOn, WorkerRecord } from "../shared/domain/placement.js";
import type { ExecutionRecord, HistoryEvent, NodeRecord, NodeStatus } from "../shared/domain/records.js";
import { canTransitionNode, isTerminalExecution, isTerminalNode } from "../shared/domain/states.js";
import type { Engine } from "../shared/engine/engine.js";
import { HISTORY } from "../shared/engine/lifecycle.js";
import { Payloads } from "../shared/engine/payloads.js";
import type { BlobStore, Store } from "../shared/ports.js";
import type { AuditStore, NodeWrite } from "./audit-store.js";
import { CatchRules } from "./catch-rules.js";
import type { ExternalFacts, Settlement } from "./externals.js";
import { checkFanOut, refusedByBudget } from "./fan-out-invariants.js";
import { checkHistory } from "./history-order.js";
import { checkLoops } from "./loop-invariants.js";
import {
  type CallbackEnd,
  type ChildEnd,
  type Reference,
  type ReferenceNode,
  referenceOnFailure,
  referenceRun,
} from "./reference.js";
import type { HandlerRun } from "./watched-tasks.js";

export interface Violation {
  rule: string;
  executionId?: string;
  nodeId?: string;
  message: string;
  /** The open finding (sim/open-findings.ts) the checker attributes it to, when it can tell. */
  finding?: string;
}

export interface CheckResult {
  violations: Violation[];
  warnings: Violation[];
  /** Stored forms of the completed nodes' outputs: how many inline, blobs, parts. */
  counts?: Record<string, number>;
}

export interface CheckInput {
  /** The store the engine wrote to, read directly (no gates). */
  store: Store;
  /** The blob store the engines wrote to, read directly (no gates, nothing planted). */
  blobs: BlobStore;
  /** The engines' payload settings (EngineOptions.payloads). */
  payloads: { inlineBytes: number; maxPartsBytes: number };
  audit: AuditStore;
  /** An engine over `store`, for describeExecution. */
  engine: Engine;
  definitions: ReadonlyMap<string, WorkflowDefinition>;
  /** The input the clients send to each workflow's executions, by workflow name. */
  inputs: ReadonlyMap<string, unknown>;
  /** Executions a client asked to cancel (whether or not the request got through). */
  cancelRequested: ReadonlySet<string>;
  /** Executions whose cancel request was answered 202. */
  cancelAccepted: ReadonlySet<string>;
  /** The clients' creates, all with an idempotency key, and what they were answered. */
  keys: KeyedCreates;
  /** Every handler run the worlds' task registries recorded (watched-tasks.ts). */
  handlerRuns?: readonly HandlerRun[];
  /** The engines' EngineOptions.claimAfterSeconds in ms (0: every attempt claimed before it runs). */
  claimAfterMs?: number;
  /** The external workers' fleet, their reports and the callbacks' settlements (worlds with a fleet). */
  externals?: ExternalFacts;
  /** The fan-out budget the engines were given (default FAN_OUT_LIMITS). */
  fanOut?: FanOutLimits;
  /** Whether the world ran out of work (ended "finished"): a cancelled tree must have ended then. */
  settled?: boolean;
}

export interface KeyedCreates {
  /** Each client's execution: its workflow and key, and the execution each answer to its creates named. */
  plans: ReadonlyArray<{ workflow: string; key: string; answers: readonly string[] }>;
  /** A client's own create refused with IdempotencyKeyConflict (the same request: never). */
  refused: ReadonlyArray<{ plan: number; message: string }>;
  /** A create with a client's key but another input or start flag, answered with an execution (never). */
  answered: ReadonlyArray<{ plan: number; differs: string; executionId: string }>;
}

const NODE_TERMINAL_EVENTS = new Set<string>([
  HISTORY.nodeCompleted,
  HISTORY.nodeFailed,
  HISTORY.nodeCancelled,
  HISTORY.nodeSkipped,
]);
/** The terminal event each terminal node status is written with. */
const TERMINAL_EVENT_OF: Partial<Record<NodeStatus, string>> = {
  COMPLETED: HISTORY.nodeCompleted,
  FAILED: HISTORY.nodeFailed,
  CANCELLED: HISTORY.nodeCancelled,
  SKIPPED: HISTORY.nodeSkipped,
};
/** The statuses a node may be skipped from (the checker's own table, not the engine's). */
const SKIPPABLE_FROM = new Set<NodeStatus>(["PENDING", "QUEUED", "RUNNING"]);
const NODE_ENDS = new Set<NodeStatus>(["COMPLETED", "FAILED", "CANCELLED", "SKIPPED"]);
const EXECUTION_TERMINAL_EVENTS = new Set<string>([
  HISTORY.executionSucceeded,
  HISTORY.executionFailed,
  HISTORY.executionCancelled,
]);

export async function checkInvariants(input: CheckInput): Promise<CheckResult> {
  const violations: Violation[] = [];
  const warnings: Violation[] = [];
  const graphs = new Map<string, WorkflowGraph>();
  for (const [name, definition] of input.definitions) graphs.set(name, compileGraph(definition));
  const loader = new Payloads(input.blobs);
  const counts = {
    // first attempts whose claim rode their ending (attempt-fence.ts)
    claimsCarried: 0,
    outputsInline: 0,
    outputsBlob: 0,
    outputsParts: 0,
    inputsBlob: 0,
    // flow control: nodes skipped (by their `when`, or by their fan-in), failed under
    // `onError: "continue"`, failed with an ExpressionError, and completed with mapped params
    nodesSkipped: 0,
    skippedByWhen: 0,
    nodesContinued: 0,
    failuresCaught: 0,
    expressionErrors: 0,
    paramsMapped: 0,
    onFailureRuns: 0,
    // maps: completed (empty ones among them), failed with MapFailed, their items written (with
    // attempts lost to crashes or expired leases, cancelled, tolerated failures in completed maps),
    // maps whose items filled every lane at once, items claimed after their map attempt ended and
    // item handlers that began after it (a claim that raced the end)
    mapsCompleted: 0,
    mapsEmpty: 0,
    mapsFailed: 0,
    mapItems: 0,
    mapItemsLost: 0,
    mapItemsCancelled: 0,
    mapItemsTolerated: 0,
    mapsAtFullWidth: 0,
    itemsClaimedAfterMapEnd: 0,
    itemRunsAfterMapEnd: 0,
    // child executions: started, by their end; those no attempt waited for (orphans), the orphans
    // the sweeper cancelled; children refused at the depth limit
    children: 0,
    childrenSucceeded: 0,
    childrenFailed: 0,
    childrenCancelled: 0,
    orphanChildren: 0,
    orphansCancelled: 0,
    depthRefused: 0,
    childrenOfItems: 0,
    // external workers: claims by workers (each checked against the worker's registration then),
    // claims that filled a worker to its maxParallel (or a node's maxParallelPerWorker), writes made
    // with a worker's task token, reports answered as accepted that wrote nothing;
    // callbacks completed and failed by their settler, attempts timed out, settler's calls checked
    externalClaims: 0,
    placementsChecked: 0,
    claimsAtFullCapacity: 0,
    tokenWritesChecked: 0,
    callbacksCompleted: 0,
    callbacksFailed: 0,
    callbacksTimedOut: 0,
    settlementsChecked: 0,
    reportsWithoutEffect: 0,
    claimsAtNodeLimit: 0,
    // loop nodes (sim/loop-invariants.ts): completed, their iterations (children), failed with
    // LoopLimitExceeded, failed by an iteration's failure
    loopsCompleted: 0,
    loopIterations: 0,
    loopLimitExceeded: 0,
    loopsChildFailed: 0,
  };
  /** Each settler's call by its callId: what it sent. */
  const settlementsByCall = new Map<number, Settlement>(
    (input.externals?.settlements ?? []).map((s) => [s.callId, s]),
  );
  // A first attempt run before its claim was written (a lazy claim, attempt-fence.ts) counts only
  // if its own process wrote that claim: a copy whose claim was refused changed nothing, and may
  // have run with other inputs (a join's racing deciders) than the ones recorded.
  const claimWriter = new Map<string, string>();
  for (const w of input.audit.nodeWrites)
    for (const e of w.events)
      if (e.type === HISTORY.nodeStarted) {
        const key = `${w.executionId}/${w.nodeId}/${e.attempt ?? 0}`;
        if (!claimWriter.has(key)) claimWriter.set(key, w.process.split(" ")[0] ?? "");
      }
  const countedRun = (run: HandlerRun) =>
    !isLazyRun(run, input.claimAfterMs ?? 0) ||
    claimWriter.get(`${run.executionId}/${run.nodeId}/${run.attempt}`) === `p${run.processId}`;
  const runsByNode = new Map<string, HandlerRun[]>();
  for (const run of input.handlerRuns ?? []) {
    if (!countedRun(run)) continue;
    const key = `${run.executionId}/${run.nodeId}`;
    runsByNode.set(key, [...(runsByNode.get(key) ?? []), run]);
  }
  /** The value a payload stands for, or why it cannot be had. */
  const resolve = async (payload: Payload): Promise<{ value: unknown } | { error: string }> => {
    try {
      return { value: await loader.load(payload) };
    } catch (error) {
      return { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  };

  const executions = [];
  for (let next: string | undefined, first = true; first || next; first = false) {
    const page = await input.store.listExecutions({ limit: 100, ...(next ? { next } : {}) });
    executions.push(...page.items);
    next = page.next;
  }

  // Clients' keys only: a child's key is its parent's node attempt's (checked as child-once below).
  violations.push(
    ...checkKeys(
      executions.filter((e) => !e.parent),
      input.keys,
    ),
  );
  const family = await childFamily(input, executions);

  const writesByNode = new Map<string, NodeWrite[]>();
  for (const write of input.audit.nodeWrites) {
    const key = `${write.executionId}/${write.nodeId}`;
    writesByNode.set(key, [...(writesByNode.get(key) ?? []), write]);
  }

  for (const execution of executions) {
    const id = execution.executionId;
    const v = (rule: string, message: string, nodeId?: string, finding?: string) =>
      violations.push({
        rule,
        executionId: id,
        ...(nodeId ? { nodeId } : {}),
        message,
        ...(finding ? { finding } : {}),
      });
    const definition = input.definitions.get(execution.workflow);
    const graph = graphs.get(execution.workflow);
    if (!definition || !graph) {
      v("unknown-workflow", `workflow ${execution.workflow} is not one the simulation registered`);
      continue;
    }
    const nodeDefinitions = new Map(definition.nodes.map((n) => [n.id, n]));
    /** The node fails under `onError: "continue"`: its dependants see its error and go on. */
    const continues = (nodeId: string) => nodeDefinitions.get(nodeId)?.onError === "continue";
    /** Catch edges (sim/catch-rules.ts): whose failures are caught, how an end counts per child. */
    const catches = new CatchRules(definition);
    /** Its failure for good (this record's) leaves the execution running: continue, or caught. */
    const goesOnFrom = (record: NodeRecord) => catches.goesOn(record.nodeId, record.error?.name);

    // ── the execution's own lifecycle ──────────────────────────────────────────────────────────
    if (!isTerminalExecution(execution.status)) v("terminal", `execution ended the run ${execution.status}`);
    const executionWrites = input.audit.executionWrites.filter((w) => w.executionId === id);
    let terminalSeen = false;
    let redrives = 0;
    for (const write of executionWrites) {
      // A redrive revives a FAILED execution (or a RUNNING one with dead letters): FAILED → RUNNING
      // with its own event, after which the execution may end again.
      if (write.event?.type === HISTORY.executionRedriven) {
        redrives++;
        if (write.before?.status !== "FAILED" && write.before?.status !== "RUNNING")
          v("execution-terminal-stable", `redriven from ${write.before?.status}`);
        if (write.after.status !== "RUNNING")
          v("execution-terminal-stable", `redriven to ${write.after.status}`);
        terminalSeen = false;
        continue;
      }
      // Bookkeeping of the sweeper's index (sweepAt alone) may follow the end; nothing else may.
      if (
        write.before &&
        isTerminalExecution(write.before.status) &&
        !onlySweepAtChanged(write.before, write.after)
      )
        v(
          "execution-terminal-stable",
          `a ${write.op} write was accepted after it ended ${write.before.status}`,
        );
      if (terminalSeen && write.event)
        v("execution-terminal-stable", `event ${write.event.type} after its terminal event`);
      if (write.event && EXECUTION_TERMINAL_EVENTS.has(write.event.type)) terminalSeen = true;
    }
    // Map items' events too: they are the items' records' (the API shows them only on request).
    const history = await input.store.listHistory(id, { withItems: true });
    const executionEvents = history.filter((e) => e.nodeId === undefined);
    const terminalEvents = executionEvents.filter((e) => EXECUTION_TERMINAL_EVENTS.has(e.type));
    // One end per life: the first, and one after each redrive of a failed execution.
    const failedBeforeRedrive = executionEvents.filter((e) => e.type === HISTORY.executionRedriven).length;
    if (failedBeforeRedrive !== redrives)
      v("history", `${failedBeforeRedrive} ExecutionRedriven events for ${redrives} redrive writes`);
    if (
      isTerminalExecution(execution.status) &&
      (terminalEvents.length < 1 || terminalEvents.length > redrives + 1)
    )
      v(
        "execution-terminal-stable",
        `${terminalEvents.length} terminal events for a ${execution.status} execution redriven ${redrives} times`,
      );
    const expectedTerminal = {
      SUCCEEDED: HISTORY.executionSucceeded,
      FAILED: HISTORY.executionFailed,
      CANCELLED: HISTORY.executionCancelled,
    }[execution.status as "SUCCEEDED"];
    const lastTerminal = terminalEvents.at(-1);
    if (expectedTerminal && lastTerminal && lastTerminal.type !== expectedTerminal)
      v(
        "execution-terminal-stable",
        `status ${execution.status} but last terminal event ${lastTerminal.type}`,
      );

    // ── history = the events of the accepted writes ───────────────────────────────────────────
    const auditEvents: HistoryEvent[] = [
      ...executionWrites.flatMap((w) => (w.event ? [w.event] : [])),
      ...input.audit.nodeWrites.filter((w) => w.executionId === id).flatMap((w) => w.events),
    ];
    if (!sameEvents(history, auditEvents))
      v(
        "history",
        `the store's history (${history.length} events) differs from the accepted writes' events (${auditEvents.length})`,
      );

    // ── nodes ─────────────────────────────────────────────────────────────────────────────────
    const records = new Map((await input.store.listNodes(id)).map((r) => [r.nodeId, r]));
    // Map items (records of their own, `<map>[<attempt>.<index>]`): their writes, in write order.
    const itemWrites = new Map<string, NodeWrite[]>();
    for (const w of input.audit.nodeWrites)
      if (w.executionId === id && parseMapItemId(w.nodeId))
        itemWrites.set(w.nodeId, [...(itemWrites.get(w.nodeId) ?? []), w]);
    const itemRecords = new Map(
      (await input.store.getNodes(id, [...itemWrites.keys()])).map((r) => [r.nodeId, r]),
    );
    const idOf = (index: number) => graph.nodes[index]!.id;
    checkHistory({
      history,
      executionWrites,
      nodeWrites: input.audit.nodeWrites.filter((w) => w.executionId === id),
      nodeIds: graph.nodes.map((n) => n.id),
      records: new Map([...records, ...itemRecords]),
      settled: isTerminalExecution(execution.status) && execution.sweepAt === undefined,
      v,
    });

    // ── payloads: every one the store accepted, in the final records and in every write ───────
    const inputs = new Set<string>([encodeStoredPayload(execution.input)]);
    for (const w of executionWrites) inputs.add(encodeStoredPayload(w.after.input));
    const outputs = new Map<string, Set<string>>();
    for (const node of graph.nodes) {
      const seen = new Set<string>();
      const output = records.get(node.id)?.output;
      if (output !== undefined) seen.add(encodeStoredPayload(output));
      for (const w of writesByNode.get(`${id}/${node.id}`) ?? [])
        if (w.after.output !== undefined) seen.add(encodeStoredPayload(w.after.output));
      outputs.set(node.id, seen);
    }
    const checkedBlobs = new Set<string>();
    const checkBlobs = async (payload: Payload, nodeId?: string) => {
      for (const ref of blobsOf(payload)) {
        if (checkedBlobs.has(ref.key)) continue;
        checkedBlobs.add(ref.key);
        const text = await input.blobs.get(ref.key);
        const where = `blob ${ref.key} (${ref.bytes} bytes)`;
        if (text === undefined) v("blob", `${where} is referred to but not in the blob store`, nodeId);
        else {
          const bytes = Buffer.byteLength(text, "utf8");
          if (bytes !== ref.bytes) v("blob", `${where} holds ${bytes} bytes`, nodeId);
          const sha256 = createHash("sha256").update(text, "utf8").digest("hex");
          if (sha256 !== ref.sha256) v("blob", `${where} hashes to ${sha256}, not ${ref.sha256}`, nodeId);
        }
        if (ref.key !== blobKey(id, ref.sha256))
          v("blob", `${where} is not at its content address ${blobKey(id, ref.sha256)}`, nodeId);
      }
    };
    /** The form the inline threshold gives a value (Payloads.saveJson): inline up to it, a blob above. */
    const checkForm = (payload: Payload, what: string, nodeId?: string) => {
      const roundTrip = decodeStoredPayload(encodeStoredPayload(payload));
      if (!isDeepStrictEqual(roundTrip, payload))
        v(
          "payload-form",
          `${what}'s stored form decodes to ${json(roundTrip)}, not ${json(payload)}`,
          nodeId,
        );
      if ("json" in payload) {
        const bytes = Buffer.byteLength(payload.json, "utf8");
        if (bytes > input.payloads.inlineBytes)
          v(
            "payload-form",
            `${what} is kept inline at ${bytes} bytes, over ${input.payloads.inlineBytes}`,
            nodeId,
          );
      } else if ("blob" in payload) {
        if (payload.blob.bytes <= input.payloads.inlineBytes)
          v(
            "payload-form",
            `${what} is a blob of ${payload.blob.bytes} bytes, within the inline ${input.payloads.inlineBytes}`,
            nodeId,
          );
      }
    };
    // A map's items' outputs, and the chunks its list is kept in: stored like any value.
    const itemPayloads = new Map<string, { payload: Payload; what: string; nodeId: string }>();
    for (const [itemId, writes] of itemWrites)
      for (const w of writes)
        if (w.after.output !== undefined)
          itemPayloads.set(encodeStoredPayload(w.after.output), {
            payload: w.after.output,
            what: "the item's output",
            nodeId: itemId,
          });
    for (const node of graph.nodes)
      for (const w of writesByNode.get(`${id}/${node.id}`) ?? [])
        for (const chunk of w.after.composite?.kind === "map" ? w.after.composite.chunks : [])
          itemPayloads.set(encodeStoredPayload(chunk), {
            payload: chunk,
            what: "a chunk of its items",
            nodeId: node.id,
          });
    for (const { payload, what, nodeId } of itemPayloads.values()) {
      await checkBlobs(payload, nodeId);
      checkForm(payload, what, nodeId);
      if ("parts" in payload) v("payload-form", `${what} is kept as parts`, nodeId);
    }
    for (const stored of inputs) {
      const payload = decodeStoredPayload(stored);
      await checkBlobs(payload);
      checkForm(payload, "the input");
      if ("parts" in payload) v("payload-form", "the input is kept as parts");
      if ("blob" in payload) counts.inputsBlob++;
    }
    for (const node of graph.nodes) {
      const composes = input.engine.tasks.get(node.type)?.outputsDeps === true;
      for (const stored of outputs.get(node.id) ?? []) {
        const payload = decodeStoredPayload(stored);
        await checkBlobs(payload, node.id);
        checkForm(payload, "the output", node.id);
        if ("json" in payload) counts.outputsInline++;
        else if ("blob" in payload) counts.outputsBlob++;
        else {
          counts.outputsParts++;
          if (!composes) v("payload-form", `a ${node.type} node's output is kept as parts`, node.id);
          const bytes = storedBytes(payload);
          if (bytes > input.payloads.maxPartsBytes)
            v(
              "payload-form",
              `its parts take ${bytes} bytes stored, over ${input.payloads.maxPartsBytes}`,
              node.id,
            );
          if (payload.parts.every(([, part]) => "json" in part))
            v("payload-form", "its parts are all inline, yet not joined into one text", node.id);
          // Composed without copying: each member is a dependency's stored output, as it is stored.
          for (const [key, part] of payload.parts) {
            const dep = graph.byId.get(key);
            const depRecord = records.get(key);
            const depOutput = depRecord?.output;
            if (!dep || !node.parents.includes(dep.index))
              v("payload-form", `its parts hold ${key}, not a dependency`, node.id);
            else if (depRecord?.status === "FAILED" && goesOnFrom(depRecord)) {
              // A continue-failed (or caught) dependency has no output: its member is its error.
              const seen = await resolve(part);
              const expected = continues(key) ? errorSeen(depRecord) : caughtErrorSeen(depRecord);
              if ("error" in seen || !isDeepStrictEqual(seen.value, expected))
                v(
                  "continue-deps",
                  `its member ${key} is ${json("error" in seen ? seen.error : seen.value)}, not that continue-failed dependency's ${json(expected)}`,
                  node.id,
                );
            } else if (depOutput === undefined || !isDeepStrictEqual(part, depOutput))
              v(
                "payload-form",
                `its member ${key} is ${json(part)}, not that dependency's stored output ${json(depOutput)}`,
                node.id,
              );
          }
        }
      }
    }

    // ── the input, resolved, is what the client sent ───────────────────────────────────────────
    const storedInput = await resolve(execution.input);
    // A client's execution: what its client sent; a child: what its parent's node mapped for it.
    let sent: unknown = input.inputs.get(execution.workflow) ?? null;
    if (execution.parent) {
      // A loop's iteration: the input its parent's check (loop-invariants.ts) evaluated for it.
      const mapped =
        family.loopInputs.get(id) ??
        family.inputs.get(childInputKey(execution.parent.executionId, execution.parent.nodeId));
      if (mapped) sent = mapped.value;
      else {
        v("child-input", `its parent's node ${execution.parent.nodeId} maps no input for a child`);
        sent = "error" in storedInput ? null : storedInput.value;
      }
    }
    if ("error" in storedInput) v("input", `the input cannot be resolved (${storedInput.error})`);
    else if (!isDeepStrictEqual(storedInput.value, sent))
      v("input", `the input resolves to ${json(storedInput.value)}, but the client sent ${json(sent)}`);
    // The writes that changed each node's status: when it first became done for one dependant
    // (COMPLETED, or FAILED under `onError: "continue"` or taken by its catch edge), skipped for it
    // (SKIPPED, or the path a catch edge did not take) or bad (a failure nobody caught, CANCELLED).
    const statusWrites = new Map<string, NodeWrite[]>();
    for (const node of graph.nodes)
      statusWrites.set(
        node.id,
        (writesByNode.get(`${id}/${node.id}`) ?? []).filter((w) => w.before?.status !== w.after.status),
      );
    const endedBefore = (end: "done" | "skipped" | "bad", parentId: string, childId: string, seq: number) =>
      (statusWrites.get(parentId) ?? []).some(
        (w) => w.seq <= seq && catches.endFor(parentId, childId, w.after.status, w.after.error?.name) === end,
      );

    let failedForGood = false;
    const lostAttempts = new Map<string, boolean>();
    for (const node of graph.nodes) {
      const record = records.get(node.id);
      const writes = writesByNode.get(`${id}/${node.id}`) ?? [];
      const events = writes.flatMap((w) => w.events);
      const count = (type: string, attempt?: number) =>
        events.filter((e) => e.type === type && (attempt === undefined || e.attempt === attempt)).length;
      const nv = (rule: string, message: string) => v(rule, message, node.id);

      if (count(HISTORY.nodeCompleted) > 1)
        nv("complete-once", `${count(HISTORY.nodeCompleted)} NodeCompleted events`);
      const completions = writes.filter(
        (w) => w.after.status === "COMPLETED" && w.before?.status !== "COMPLETED",
      );
      if (completions.length > 1) nv("complete-once", `${completions.length} writes completed it`);
      if (count(HISTORY.nodeQueued) > 1)
        nv("dispatch-once", `${count(HISTORY.nodeQueued)} NodeQueued events`);
      const attempts = new Set(events.map((e) => e.attempt ?? 0));
      for (const attempt of attempts) {
        if (count(HISTORY.nodeStarted, attempt) > 1)
          nv("dispatch-once", `attempt ${attempt} started ${count(HISTORY.nodeStarted, attempt)} times`);
        if (count(HISTORY.nodeRetryScheduled, attempt) > 1)
          nv(
            "dispatch-once",
            `attempt ${attempt} scheduled ${count(HISTORY.nodeRetryScheduled, attempt)} times`,
          );
      }

      // arrivals: once per parent, ok only after the parent completed, bad only after it failed/cancelled
      const arrived = new Set<number>();
      for (const w of writes) {
        if (!w.arrival) {
          // A redrive forgets bad arrivals (it resets badDeps): once revived, those parents arrive again.
          for (const p of w.before?.badDeps ?? []) if (!w.after.badDeps.includes(p)) arrived.delete(p);
          continue;
        }
        const { parentIndex } = w.arrival;
        const outcome: string = w.arrival.outcome;
        if (arrived.has(parentIndex)) nv("arrival-once", `parent ${idOf(parentIndex)} arrived twice`);
        arrived.add(parentIndex);
        if (!node.parents.includes(parentIndex))
          nv("fan-in", `arrival from ${idOf(parentIndex)}, not a parent`);
        const end = outcome === "ok" ? "done" : outcome === "skipped" ? "skipped" : "bad";
        if (!endedBefore(end, idOf(parentIndex), node.id, w.seq))
          nv(
            "fan-in",
            `${outcome} arrival from ${idOf(parentIndex)} before that parent ${outcome === "ok" ? "was done" : outcome === "skipped" ? "was skipped" : "failed"}`,
          );
      }

      // shard arrivals (wide `all` fan-ins): once per parent, only after that parent completed
      const sharded = new Set<number>();
      for (const w of input.audit.shardWrites) {
        if (w.executionId !== id || w.childId !== node.id) continue;
        if (sharded.has(w.parentIndex))
          nv("arrival-once", `parent ${idOf(w.parentIndex)} recorded twice in shards`);
        sharded.add(w.parentIndex);
        if (!node.parents.includes(w.parentIndex))
          nv("fan-in", `shard arrival from ${idOf(w.parentIndex)}, not a parent`);
        if (
          !endedBefore("done", idOf(w.parentIndex), node.id, w.seq) &&
          !endedBefore("skipped", idOf(w.parentIndex), node.id, w.seq)
        )
          nv("fan-in", `shard arrival from ${idOf(w.parentIndex)} before that parent was done`);
      }

      // fan-in: leaving PENDING for QUEUED needs enough done dependencies, once. An `all` fan-in's
      // inputs are its done parents, every other one skipped before (skips are not completions).
      const joins = node.parents.length > 1 && node.fanIn.kind !== "all";
      const required = node.parents.length === 0 ? 0 : requiredCompletions(node.fanIn, node.parents.length);
      const checkAll = (seq: number, what: string) => {
        for (const parent of node.parents)
          if (
            !endedBefore("done", idOf(parent), node.id, seq) &&
            !endedBefore("skipped", idOf(parent), node.id, seq)
          )
            nv("fan-in", `${what} before its dependency ${idOf(parent)} was done or skipped`);
      };
      for (const w of writes) {
        if ((w.before?.status ?? "PENDING") === "PENDING" && w.after.status === "RUNNING") {
          // A direct or join node's claim straight from PENDING: at most one parent, or an `all`
          // fan-in, with every parent done (or skipped) before it; or an `any`/`count:N` one, with
          // the dependencies its message carried recorded, enough and each done before it.
          if (!joins) {
            checkAll(w.seq, "claimed from PENDING");
            continue;
          }
          const inputs = w.after.okDeps;
          if (inputs.length < required)
            nv("fan-in", `claimed from PENDING with ${inputs.length} of ${required} required dependencies`);
          if (inputs.some((p) => !node.parents.includes(p)))
            nv("fan-in", `claimed with okDeps ${inputs} including a non-parent`);
          for (const parent of inputs)
            if (!endedBefore("done", idOf(parent), node.id, w.seq))
              nv("fan-in", `claimed before its dependency ${idOf(parent)} was done`);
          continue;
        }
        // The decision: PENDING → QUEUED, or PENDING → COMPLETED for an inline node run on the spot.
        const decided = w.after.status === "QUEUED" || w.after.status === "COMPLETED";
        if ((w.before?.status ?? "PENDING") !== "PENDING" || !decided) continue;
        const ok = w.after.okDeps;
        if (joins && ok.length < required)
          nv("fan-in", `queued with ${ok.length} of ${required} required dependencies`);
        if (!joins) checkAll(w.seq, "queued");
        if (ok.some((p) => !node.parents.includes(p))) nv("fan-in", `okDeps ${ok} include a non-parent`);
        // (An `all` fan-in's okDeps may name skipped parents too: checkAll holds it to its parents.)
        if (joins)
          for (const p of ok)
            if (!endedBefore("done", idOf(p), node.id, w.seq))
              nv("fan-in", `queued counting ${idOf(p)} before it was done`);
      }

      // state machine, terminal stability, fencing
      let maxAttempt = 0;
      let terminalEvent: string | undefined;
      for (const w of writes) {
        const from: NodeStatus = w.before?.status ?? "PENDING";
        const to = w.after.status;
        // A redrive revives a FAILED or CANCELLED node: to QUEUED (a new attempt) or PENDING; and a
        // map left RUNNING by the end it follows (its items cancelled): to QUEUED, started afresh.
        const revival = w.events.some((e) => e.type === HISTORY.nodeRedriven);
        const strandedMap = from === "RUNNING" && w.before?.composite?.kind === "map" && to === "QUEUED";
        if (revival) {
          if (
            !strandedMap &&
            ((from !== "FAILED" && from !== "CANCELLED") || (to !== "QUEUED" && to !== "PENDING"))
          )
            nv("state-machine", `redriven ${from} → ${to}`);
          terminalEvent = undefined;
        } else if (isTerminalNode(from) || NODE_ENDS.has(from))
          nv("node-terminal-stable", `a ${w.op} write was accepted on a ${from} node`);
        else if (from !== to && !canTransitionNode(from, to)) nv("state-machine", `${from} → ${to}`);
        else if (to === "SKIPPED" && from !== to && !SKIPPABLE_FROM.has(from))
          nv("state-machine", `${from} → SKIPPED`);
        const c = w.condition;
        if (c?.leaseToken !== undefined && w.before?.lease?.token !== c.leaseToken)
          nv(
            "superseded-write",
            `a write fenced on token ${c.leaseToken} was accepted while the lease was ${w.before?.lease?.token ?? "none"} (attempt ${w.before?.attempt}) [${w.process}]`,
          );
        if (c?.attempt !== undefined && w.before !== undefined && w.before.attempt !== c.attempt)
          nv(
            "superseded-write",
            `a write for attempt ${c.attempt} was accepted at attempt ${w.before.attempt}`,
          );
        for (const e of w.events) {
          if (terminalEvent) nv("node-terminal-stable", `${e.type} after ${terminalEvent}`);
          if (NODE_TERMINAL_EVENTS.has(e.type)) terminalEvent = e.type;
          const attempt = e.attempt ?? 0;
          if (attempt > 0 && attempt < maxAttempt)
            nv(
              "superseded-write",
              `${e.type} of attempt ${attempt} accepted after attempt ${maxAttempt} began [${w.process}]`,
            );
          maxAttempt = Math.max(maxAttempt, attempt);
        }
      }
      // One terminal event in the node's (last) life, the one of its status.
      if (record && NODE_ENDS.has(record.status)) {
        const lastRevival = events.findLastIndex((e) => e.type === HISTORY.nodeRedriven);
        const ends = events.slice(lastRevival + 1).filter((e) => NODE_TERMINAL_EVENTS.has(e.type));
        const expected = TERMINAL_EVENT_OF[record.status];
        if (ends.length !== 1 || ends[0]!.type !== expected)
          nv(
            "terminal-event",
            `${record.status} with terminal events [${ends.map((e) => e.type).join(", ")}], not one ${expected}`,
          );
      }
      if (record?.status === "COMPLETED") {
        const done = events.find((e) => e.type === HISTORY.nodeCompleted);
        if (!done) nv("history", "COMPLETED without a NodeCompleted event");
        else if (done.attempt !== record.attempt || record.attempt !== maxAttempt)
          nv("superseded-write", `completed by attempt ${done.attempt}; the last attempt is ${maxAttempt}`);
      }
      if (record?.okDeps.some((p) => record.badDeps.includes(p)))
        nv("fan-in", "a parent is in both okDeps and badDeps");
      // flaky fail nodes: RetryableError only on attempts ≤ times; other lost attempts shift the pass
      const params = (definition.nodes[node.index]!.params ?? {}) as { times?: number; retryable?: boolean };
      if (node.type === "fail" && params.times !== undefined) {
        const retries = events.filter((e) => e.type === HISTORY.nodeRetryScheduled);
        // Attempts lost to something else than the flaky failure itself: a crash, an expired lease, or
        // a redrive after a cancellation (the revived node runs under a later attempt number).
        const lost =
          retries.some((e) => errorName(e) !== "RetryableError") ||
          events.some((e) => e.type === HISTORY.nodeRedriven);
        lostAttempts.set(node.id, lost);
        for (const e of retries)
          if (errorName(e) === "RetryableError" && (e.attempt ?? 0) - 1 > params.times)
            nv(
              "output",
              `attempt ${(e.attempt ?? 0) - 1} failed though the node passes after ${params.times}`,
            );
        if (record?.status === "COMPLETED" && record.attempt <= params.times)
          nv("output", `completed on attempt ${record.attempt} though it fails its first ${params.times}`);
      }
      if (node.type === "fail" && params.retryable === false && record?.status === "COMPLETED")
        nv("output", "completed though its handler always fails");

      // a SKIPPED node never ran: no handler run, no completion, no output
      if (record?.status === "SKIPPED") {
        counts.nodesSkipped++;
        const ran = runsByNode.get(`${id}/${node.id}`) ?? [];
        if (ran.length > 0)
          nv(
            "skipped-ran",
            `SKIPPED, yet its handler ran (attempt${ran.length > 1 ? "s" : ""} ${ran.map((r) => r.attempt).join(", ")})`,
          );
        if (count(HISTORY.nodeCompleted) > 0) nv("skipped-ran", "SKIPPED, yet it has a NodeCompleted event");
        if (record.output !== undefined) nv("skipped-ran", `SKIPPED with an output ${json(record.output)}`);
      }
      if (record?.status === "FAILED" && continues(node.id)) counts.nodesContinued++;
      if (record?.status === "FAILED" && !continues(node.id) && goesOnFrom(record)) counts.failuresCaught++;
      if (record?.status === "FAILED" && record.error?.name === "ExpressionError") counts.expressionErrors++;

      // a node that failed for good: for a reason, and (while the execution ran) failing it
      if (record?.status === "FAILED") {
        const error = record.error;
        const legit =
          error?.name === "DeadLettered" ||
          error?.name === "ExpressionError" ||
          error?.retryable === false ||
          record.attempt >= node.retry.maxAttempts;
        if (!legit)
          nv(
            "failed-node-cause",
            `FAILED on attempt ${record.attempt} of ${node.retry.maxAttempts} with ${error?.name} (${error?.message})`,
          );
        // A failure a catch edge took never fails the execution (onError continue is checked below).
        if (!continues(node.id) && goesOnFrom(record) && execution.failedNode === node.id)
          nv(
            "caught-failure",
            `its failure (${error?.name}) was caught by a catch edge, yet it failed the execution`,
          );
        const failure = writes.findLast((w) => w.after.status === "FAILED");
        // Under `onError: "continue"`, or caught by a catch edge, a failure for good does not fail
        // the execution.
        if (failure?.executionStatus === "RUNNING" && !goesOnFrom(record)) {
          failedForGood = true;
          if (execution.status === "SUCCEEDED")
            nv(
              "fail-fast",
              `failed for good (${error?.name}) while the execution ran, yet the execution SUCCEEDED`,
            );
        }
      }

      if (
        isTerminalExecution(execution.status) &&
        (record?.status === "QUEUED" || record?.status === "RUNNING")
      )
        warnings.push({
          rule: "leftover",
          executionId: id,
          nodeId: node.id,
          message: `left ${record.status} (attempt ${record.attempt}) in a ${execution.status} execution`,
        });
    }

    // ── ends and outputs against the reference evaluator ──────────────────────────────────────
    // ── child executions: this one's link to its parent, and the children its nodes started ─────
    // A `vars` node's output is a fact of the run (the reference takes it; vars-invariants.ts checks it).
    const varsOutputs = new Map<string, unknown>();
    for (const record of records.values()) {
      if (nodeDefinitions.get(record.nodeId)?.type !== "vars" || record.output === undefined) continue;
      const output = await resolve(record.output);
      if ("value" in output) varsOutputs.set(record.nodeId, output.value);
    }
    const childEnds = await checkChildren({
      input,
      counts,
      family,
      execution,
      definition,
      records,
      itemRecords,
      v,
      warn: (rule, message, nodeId) =>
        warnings.push({ rule, executionId: id, ...(nodeId ? { nodeId } : {}), message }),
    });
    const loopEnds = await checkLoops({
      blobs: input.blobs,
      engine: input.engine,
      execution,
      definition,
      records,
      byId: family.byId,
      byLink: family.byLink,
      started: family.started,
      inputs: family.loopInputs,
      counts,
      v,
    });
    const reference = await referenceRun(definition, {
      input: sent,
      execution: { id, workflow: execution.workflow, version: execution.version },
      depth: execution.depth ?? 0,
      childOf: (nodeId) => childEnds.get(nodeId),
      loopOf: (nodeId) => loopEnds.get(nodeId),
      recordedOutputOf: (nodeId) => varsOutputs.get(nodeId),
      okDepsOf: (nodeId) => {
        const node = graph.byId.get(nodeId)!;
        const record = records.get(nodeId);
        // Direct nodes (at most one parent) and `all` fan-ins see their done parents (the reference
        // picks them); `any`/`count:N` ones the dependencies recorded when they became ready.
        if (node.fanIn.kind === "all" || node.parents.length <= 1 || !record) return node.parents.map(idOf);
        return record.okDeps.map(idOf);
      },
      passingAttemptOf: (nodeId, times) => {
        const record = records.get(nodeId) ?? itemRecords.get(nodeId);
        const lost = lostAttempts.get(nodeId) ?? lostItemAttempts(itemWrites.get(nodeId) ?? []);
        return lost && record ? record.attempt : times + 1;
      },
      mapAttemptOf: (mapId) => records.get(mapId)?.attempt ?? 1,
      // Refused by the fan-out budget: its refusal is checked against the budget's log (fan-out-invariants.ts).
      fanOutRefused: (nodeId) => refusedByBudget((records.get(nodeId) ?? itemRecords.get(nodeId))?.error),
      attemptsLost: (nodeId) => lostAttempts.get(nodeId) ?? lostItemAttempts(itemWrites.get(nodeId) ?? []),
      callbackOf: (nodeId) =>
        callbackEndOf(records.get(nodeId), writesByNode.get(`${id}/${nodeId}`) ?? [], settlementsByCall),
      endedAs: (nodeId) => {
        const record = records.get(nodeId) ?? itemRecords.get(nodeId);
        if (!record || !NODE_ENDS.has(record.status)) return undefined;
        return {
          status: record.status,
          ...(record.error ? { error: { name: record.error.name, message: record.error.message } } : {}),
          handlerRan: (runsByNode.get(`${id}/${nodeId}`) ?? []).length > 0,
          attempt: record.attempt,
        };
      },
    });
    // The inputs its nodes (and map items) mapped for their children, for the children's checks.
    for (const ref of reference.nodes.values()) {
      if ("childInput" in ref) family.inputs.set(childInputKey(id, ref.id), { value: ref.childInput });
      for (const item of ref.map?.items ?? [])
        if ("childInput" in item) family.inputs.set(childInputKey(id, item.id), { value: item.childInput });
    }
    const redriven = executionWrites.some((w) => w.event?.type === HISTORY.executionRedriven);
    /** Nothing but skips and continued failures can stop it: it must succeed. */
    const clean = reference.status === "SUCCEEDED" && !family.asked(id) && !redriven;
    const outputRule = (ref: ReferenceNode | undefined) =>
      ref?.map ? "map-output" : ref && ref.continued.length > 0 ? "continue-deps" : "output";
    for (const node of graph.nodes) {
      const record = records.get(node.id);
      const ref = reference.nodes.get(node.id)!;
      const nv = (rule: string, message: string) => v(rule, message, node.id);
      const status = record?.status;
      const mayBeSkipped = ref.status === "SKIPPED" || ref.alternatives.includes("SKIPPED");
      if (status === "SKIPPED") {
        if (!mayBeSkipped)
          nv(
            "skip",
            `SKIPPED, but the reference ${ref.status === "COMPLETED" ? "runs it" : `ends it ${ref.status}`}: ${ref.why}`,
          );
        else if (ref.why.startsWith("its when")) counts.skippedByWhen++;
      } else if (ref.status === "SKIPPED" && (status === "COMPLETED" || status === "FAILED"))
        nv("skip", `${status}, but the reference skips it: ${ref.why}`);
      else if (clean && graph.sinks.includes(node.index) && ref.status === "SKIPPED")
        nv("skip", `${status ?? "never decided"}, but the reference skips it: ${ref.why}`);
      if (ref.status === "SKIPPED" && (runsByNode.get(`${id}/${node.id}`) ?? []).length > 0)
        nv("skip", `its handler ran, but the reference skips it: ${ref.why}`);
      // a `when` giving a non-boolean fails the node, and nothing else gives an ExpressionError
      const expressionFails =
        ref.status === "FAILED" && ref.error?.name === "ExpressionError" && ref.failsForGood;
      if (expressionFails && status === "COMPLETED")
        nv("expression", `COMPLETED, but the reference fails it with an ExpressionError: ${ref.why}`);
      if (status === "FAILED" && record?.error?.name === "ExpressionError" && !expressionFails)
        nv(
          "expression",
          `failed with an ExpressionError (${record.error.message}), but the reference says ${ref.status}: ${ref.why}`,
        );
      if (clean) {
        // Nothing failed for good under "fail" and nobody cancelled: no node is cancelled while the
        // execution runs, and the handlers end as the definition says.
        const cancelled = (writesByNode.get(`${id}/${node.id}`) ?? []).find(
          (w) => w.after.status === "CANCELLED" && w.before?.status !== "CANCELLED",
        );
        if (cancelled?.executionStatus === "RUNNING")
          nv(
            "clean-succeeds",
            `cancelled while the execution ran, though nothing failed for good (${ref.why})`,
          );
        if (
          ref.status === "FAILED" &&
          ref.failsForGood &&
          status !== undefined &&
          status !== "FAILED" &&
          status !== "CANCELLED" &&
          NODE_ENDS.has(status)
        )
          nv("output", `${status}, but the reference fails it: ${ref.why}`);
      }
      if (
        status === "COMPLETED" &&
        Object.keys(nodeDefinitions.get(node.id)?.params ?? {}).length > 0 &&
        JSON.stringify(nodeDefinitions.get(node.id)?.params).includes("{%")
      )
        counts.paramsMapped++;
    }
    for (const record of records.values()) {
      if (record.status !== "COMPLETED" || record.nodeId === ON_FAILURE_NODE_ID) continue;
      const ref = reference.nodes.get(record.nodeId);
      const expected = ref?.output ?? null;
      if (record.output === undefined) {
        v("output", "COMPLETED without an output", record.nodeId);
        continue;
      }
      const output = await resolve(record.output);
      if ("error" in output)
        v("output", `the output ${json(record.output)} cannot be resolved (${output.error})`, record.nodeId);
      else if (!isDeepStrictEqual(output.value, expected))
        v(
          outputRule(ref),
          `output ${json(output.value)} but the reference says ${json(expected)}${ref?.deps ? ` (deps ${json(ref.deps)})` : ""}`,
          record.nodeId,
        );
    }

    // ── maps: their items' lives, lanes, ends and outputs ─────────────────────────────────────
    await checkMaps({
      resolve,
      graph,
      definition,
      execution,
      records,
      writesByNode,
      itemWrites,
      itemRecords,
      reference,
      runsByNode,
      counts,
      v,
      warn: (rule, message, nodeId) =>
        warnings.push({ rule, executionId: id, ...(nodeId ? { nodeId } : {}), message }),
    });

    // A node failed for good under `onError: "fail"` (a continued failure is no cause).
    const failedForGoodNode = [...records.values()].some(
      (r: NodeRecord) => r.status === "FAILED" && !goesOnFrom(r) && r.nodeId !== ON_FAILURE_NODE_ID,
    );
    if (clean && execution.status !== "SUCCEEDED" && execution.status !== "RUNNING")
      v(
        "clean-succeeds",
        `${execution.status}, though nobody cancelled it and nothing failed for good under onError "fail" (${[
          ...reference.nodes.values(),
        ]
          .filter((n) => n.status !== "COMPLETED")
          .map((n) => `${n.id} ${n.status}`)
          .join(", ")})`,
      );
    switch (execution.status) {
      case "SUCCEEDED": {
        const expected: Record<string, unknown> = {};
        for (const sink of graph.sinks) {
          const record = records.get(idOf(sink));
          const status = record?.status;
          const continued = status === "FAILED" && continues(idOf(sink));
          if (status !== "COMPLETED" && status !== "SKIPPED" && !continued)
            v("succeeded-sinks", `SUCCEEDED with sink ${idOf(sink)} ${status ?? "never run"}`);
          if (status === "COMPLETED") expected[idOf(sink)] = reference.nodes.get(idOf(sink))?.output ?? null;
          else if (continued && record) expected[idOf(sink)] = errorSeen(record);
        }
        const view = await input.engine.describeExecution(id).catch((error: unknown) => error as Error);
        if (view instanceof Error)
          v("execution-output", `describing it failed (${view.name}: ${view.message})`);
        else {
          if (!isDeepStrictEqual(view.output, expected))
            v(
              "execution-output",
              `output ${json(view.output)} but the reference says ${json(expected)}`,
              undefined,
            );
          if (!isDeepStrictEqual(view.input, sent))
            v("input", `described with the input ${json(view.input)}, but the client sent ${json(sent)}`);
        }
        break;
      }
      case "FAILED":
        if (!failedForGoodNode)
          v(
            "failed-without-cause",
            [...records.values()].some((r) => r.status === "FAILED")
              ? "FAILED with no failed node but continue-failed ones (onError continue)"
              : "FAILED with no failed node",
          );
        break;
      case "CANCELLED":
        if (!family.asked(id)) v("cancel", "CANCELLED though nobody asked (nor its parent's node stopped)");
        break;
      default:
        break;
    }
    // ── the onFailure handler: run once its execution failed, never changing the execution's end ──
    const handler = definition.onFailure;
    const handlerRecord = records.get(ON_FAILURE_NODE_ID);
    const handlerRuns = runsByNode.get(`${id}/${ON_FAILURE_NODE_ID}`) ?? [];
    const failures = executionWrites.filter(
      (w) => w.after.status === "FAILED" && w.before?.status !== "FAILED",
    ).length;
    if ((handlerRecord || handlerRuns.length > 0) && (!handler || failures === 0))
      v(
        "on-failure",
        `its onFailure handler ran (${handlerRecord?.status ?? "no record"}, ${handlerRuns.length} run(s)), though ${handler ? "the execution never failed" : "the workflow has none"}`,
      );
    if (handler && handlerRecord && execution.status !== "FAILED" && !redriven)
      v("on-failure", `its onFailure handler ran, and the execution ended ${execution.status}`);
    if (handler && execution.status === "FAILED") {
      counts.onFailureRuns++;
      const handlerEvents = (writesByNode.get(`${id}/${ON_FAILURE_NODE_ID}`) ?? []).flatMap((w) => w.events);
      const completions = handlerEvents.filter((e) => e.type === HISTORY.nodeCompleted).length;
      if (completions > failures)
        v("on-failure", `its onFailure handler completed ${completions} times for ${failures} failure(s)`);
      if (!handlerRecord || (handlerRecord.status !== "COMPLETED" && handlerRecord.status !== "FAILED"))
        v(
          "on-failure",
          `FAILED, but its onFailure handler ${handlerRecord ? `was left ${handlerRecord.status}` : "never ran"}`,
        );
      else if (!redriven) {
        const expected = await referenceOnFailure(handler, {
          input: sent,
          deps: {},
          execution: { id, workflow: execution.workflow, version: execution.version },
          error: execution.error
            ? { name: execution.error.name, message: execution.error.message }
            : undefined,
        });
        // Its attempts lost to crashes or expired leases, or its message dead-lettered: a failure that
        // is not its handler's, which the reference cannot foresee.
        const lost =
          handlerRecord.status === "FAILED" &&
          (handlerRecord.error?.name === "DeadLettered" ||
            (handlerRecord.attempt >= (graph.onFailure?.retry.maxAttempts ?? 1) &&
              handlerRecord.error?.name !== "TerminalError" &&
              handlerRecord.error?.name !== "RetryableError"));
        if (expected.status !== handlerRecord.status && !lost)
          v(
            "on-failure",
            `its onFailure handler ended ${handlerRecord.status} (${handlerRecord.error?.name ?? ""}), but the reference says ${expected.status}${"why" in expected ? `: ${expected.why}` : ""}`,
          );
        else if ("output" in expected && handlerRecord.output !== undefined) {
          const output = await resolve(handlerRecord.output);
          if ("error" in output || !isDeepStrictEqual(output.value, expected.output))
            v(
              "on-failure",
              `its onFailure handler's output is ${json("error" in output ? output.error : output.value)}, but the reference says ${json(expected.output)}`,
            );
        }
      }
    }

    if (input.cancelAccepted.has(id) && execution.status !== "CANCELLED")
      v("cancel", `a cancel was accepted, yet it ended ${execution.status}`);
    if (failedForGood && execution.status === "RUNNING")
      v("fail-fast", "a node failed for good, yet it still runs");
  }
  violations.push(
    ...checkHandlerClaims(input.audit.nodeWrites, input.handlerRuns ?? [], input.claimAfterMs ?? 0),
  );
  // Lazy claims (attempt-fence.ts): carried by an ending, or written by a first heartbeat.
  for (const w of input.audit.nodeWrites) {
    const started = w.events.some((e) => e.type === HISTORY.nodeStarted);
    if (started && w.after.status !== "RUNNING") counts.claimsCarried++;
  }
  violations.push(...checkExternals(input, executions, counts));
  const fanOut = await checkFanOut({
    store: input.store,
    audit: input.audit,
    executions,
    limits: input.fanOut ?? FAN_OUT_LIMITS,
    settled: input.settled ?? false,
  });
  violations.push(...fanOut.violations);
  return { violations, warnings, counts: { ...counts, ...fanOut.counts } };
}

/**
 * Every handler run (of a node or a map item) belongs to an attempt whose claim was accepted before
 * it began — unless the attempt is claimed lazily (shared/engine/attempt-fence.ts): a node's first
 * attempt in the Lambda worker, not a map item's, when the engines claim lazily. Such a run's claim is
 * carried by its first write (or refused, for a copy), checked by the rules on writes.
 */
/** A first attempt in the Lambda worker, not a map item's, when the engines claim lazily. */
function isLazyRun(run: HandlerRun, claimAfterMs: number): boolean {
  return (
    claimAfterMs > 0 &&
    run.attempt === 1 &&
    run.process === "worker" &&
    parseMapItemId(run.nodeId) === undefined
  );
}

function checkHandlerClaims(
  writes: readonly NodeWrite[],
  runs: readonly HandlerRun[],
  claimAfterMs: number,
): Violation[] {
  const lazy = (run: HandlerRun) => isLazyRun(run, claimAfterMs);
  const claimed = new Map<string, number>();
  for (const w of writes)
    for (const e of w.events)
      if (e.type === HISTORY.nodeStarted) {
        const key = `${w.executionId}/${w.nodeId}/${e.attempt ?? 0}`;
        if (!claimed.has(key)) claimed.set(key, w.seq);
      }
  const violations: Violation[] = [];
  for (const run of runs) {
    const seq = claimed.get(`${run.executionId}/${run.nodeId}/${run.attempt}`);
    if (lazy(run)) continue;
    if (seq === undefined || (run.seq !== undefined && seq > run.seq))
      violations.push({
        rule: "handler-claimed",
        executionId: run.executionId,
        nodeId: run.nodeId,
        message: `a handler run of attempt ${run.attempt} ${seq === undefined ? "whose claim was never accepted" : `began before its claim was accepted (write ${seq}, run after write ${run.seq})`}`,
      });
  }
  return violations;
}

/** An item's attempts lost to something else than its handler's retryable failure (crashes, expired leases). */
function lostItemAttempts(writes: readonly NodeWrite[]): boolean {
  return writes.some((w) =>
    w.events.some((e) => e.type === HISTORY.nodeRetryScheduled && errorName(e) !== "RetryableError"),
  );
}

interface MapCheck {
  resolve: (payload: Payload) => Promise<{ value: unknown } | { error: string }>;
  graph: WorkflowGraph;
  definition: WorkflowDefinition;
  execution: ExecutionRecord;
  records: ReadonlyMap<string, NodeRecord>;
  writesByNode: ReadonlyMap<string, NodeWrite[]>;
  itemWrites: ReadonlyMap<string, NodeWrite[]>;
  itemRecords: ReadonlyMap<string, NodeRecord>;
  reference: Reference;
  runsByNode: ReadonlyMap<string, HandlerRun[]>;
  counts: Record<string, number>;
  v: (rule: string, message: string, nodeId?: string, finding?: string) => void;
  warn: (rule: string, message: string, nodeId?: string) => void;
}

/** One attempt of a map: when it started waiting (its list and lanes), and when it ended. */
interface MapLife {
  startSeq?: number;
  items: number;
  lanes: number;
  endSeq?: number;
}

/**
 * The map rules, per map node of the execution:
 *  - each item's own life as a node's: the state machine, never left once ended, one terminal event
 *    of its status, fenced writes, at most one start per attempt and one completion [map-item-once];
 *    a failure for good only for a reason [failed-node-cause];
 *  - every item of a COMPLETED map's attempt ended COMPLETED or FAILED, exactly the items of its
 *    list, and no more failed than tolerated [map-item-once, map-tolerance];
 *  - lanes: no item is claimed before its map attempt's waiting write; item j ≥ lanes only once
 *    item j − lanes (the one before it in its lane) ended; never more than `lanes` items of one map
 *    attempt RUNNING at once, in the audit's true write order [map-concurrency];
 *  - an item claimed after its map attempt ended never runs its handler and never completes: it is
 *    stopped (items claimed before the end may still finish) [map-ended];
 *  - a map ends as the reference decides from its items: COMPLETED with their outputs in item order
 *    (a failed item as {error}), or FAILED with MapFailed once more items failed than tolerated;
 *    each item's output is the reference's [map-output, map-tolerance];
 *  - a SKIPPED map has no items and ran no item handler [skipped-ran].
 */
async function checkMaps(c: MapCheck): Promise<void> {
  const id = c.execution.executionId;
  for (const node of c.graph.nodes) {
    if (node.type !== "map") continue;
    await checkMap(c, node);
  }
  // Items of a map of this execution only.
  for (const itemId of c.itemWrites.keys()) {
    const ref = parseMapItemId(itemId);
    if (!ref || c.graph.byId.get(ref.mapId)?.type !== "map")
      c.v("map-item-once", `an item record of no map of ${id}'s workflow`, itemId);
  }
}

async function checkMap(c: MapCheck, node: GraphNode): Promise<void> {
  const id = c.execution.executionId;
  const record = c.records.get(node.id);
  const ref = c.reference.nodes.get(node.id);
  const mapWrites = c.writesByNode.get(`${id}/${node.id}`) ?? [];
  // Its attempts' lives, from its writes.
  const lives = new Map<number, MapLife>();
  const lifeOf = (attempt: number) => {
    let life = lives.get(attempt);
    if (!life) {
      life = { items: 0, lanes: 0 };
      lives.set(attempt, life);
    }
    return life;
  };
  for (const w of mapWrites) {
    const { before, after } = w;
    const waiting = after.status === "RUNNING" && after.composite?.kind === "map";
    const wasWaiting =
      before?.status === "RUNNING" && before.composite?.kind === "map" && before.attempt === after.attempt;
    if (waiting && !wasWaiting && after.composite?.kind === "map") {
      const life = lifeOf(after.attempt);
      life.startSeq ??= w.seq;
      life.items = after.composite.items;
      life.lanes = after.composite.lanes;
    }
    if (before?.status === "RUNNING" && (after.status !== "RUNNING" || after.attempt !== before.attempt))
      lifeOf(before.attempt).endSeq ??= w.seq;
  }
  // Its items, by attempt.
  const byAttempt = new Map<number, string[]>();
  for (const itemId of c.itemWrites.keys()) {
    const item = parseMapItemId(itemId);
    if (item?.mapId !== node.id) continue;
    byAttempt.set(item.mapAttempt, [...(byAttempt.get(item.mapAttempt) ?? []), itemId]);
  }
  const itemRuns = (itemId: string) => c.runsByNode.get(`${id}/${itemId}`) ?? [];

  if (record?.status === "SKIPPED") {
    const items = [...byAttempt.values()].flat();
    if (items.length > 0) c.v("skipped-ran", `SKIPPED, yet it has ${items.length} item record(s)`, node.id);
    if (items.some((itemId) => itemRuns(itemId).length > 0))
      c.v("skipped-ran", "SKIPPED, yet an item's handler ran", node.id);
  }

  const paramsOf = (node.params ?? {}) as { retry?: { maxAttempts?: number } };
  const itemMaxAttempts = paramsOf.retry?.maxAttempts ?? node.retry.maxAttempts;

  for (const [attempt, itemIds] of byAttempt) {
    const life = lives.get(attempt);
    // Every item write of this map attempt, in true write order.
    const writes = itemIds.flatMap((itemId) => c.itemWrites.get(itemId) ?? []).sort((a, b) => a.seq - b.seq);
    for (const itemId of itemIds) {
      const item = parseMapItemId(itemId)!;
      const iv = (rule: string, message: string) => c.v(rule, message, itemId);
      const own = c.itemWrites.get(itemId) ?? [];
      const itemRecord = c.itemRecords.get(itemId);
      checkItemLife(own, itemRecord, iv);
      c.counts.mapItems = (c.counts.mapItems ?? 0) + 1;
      if (lostItemAttempts(own)) c.counts.mapItemsLost = (c.counts.mapItemsLost ?? 0) + 1;
      if (!life?.startSeq) {
        iv("map-concurrency", `written though map attempt ${attempt} never started waiting for its items`);
        continue;
      }
      if (item.index >= life.items)
        iv("map-item-once", `index ${item.index}, beyond the ${life.items} items of map attempt ${attempt}`);
      if ((own[0]?.seq ?? Number.POSITIVE_INFINITY) < life.startSeq)
        iv(
          "map-concurrency",
          `written (write ${own[0]?.seq}) before its map started waiting (${life.startSeq})`,
        );
      // Claimed after its map attempt ended: stopped, never run, never completed.
      for (const w of own) {
        const started = w.events.find((e) => e.type === HISTORY.nodeStarted);
        if (!started) continue;
        const claimedAttempt = started.attempt ?? w.after.attempt;
        const runs = itemRuns(itemId).filter((r) => r.attempt === claimedAttempt);
        if (life.endSeq !== undefined && runs.some((r) => (r.seq ?? 0) >= life.endSeq!))
          c.counts.itemRunsAfterMapEnd = (c.counts.itemRunsAfterMapEnd ?? 0) + 1;
        if (life.endSeq === undefined || w.seq < life.endSeq) continue;
        c.counts.itemsClaimedAfterMapEnd = (c.counts.itemsClaimedAfterMapEnd ?? 0) + 1;
        if (runs.length > 0)
          iv(
            "map-ended",
            `attempt ${claimedAttempt} was claimed (write ${w.seq}) after map attempt ${attempt} ended (write ${life.endSeq}), yet its handler ran`,
          );
        if (
          own.some((x) => x.seq > w.seq && x.after.status === "COMPLETED" && x.before?.status !== "COMPLETED")
        )
          iv(
            "map-ended",
            `attempt ${claimedAttempt} was claimed (write ${w.seq}) after map attempt ${attempt} ended (write ${life.endSeq}), yet it completed`,
          );
      }
      // Left open: in a map attempt that ended, or an execution that did.
      if (itemRecord && !isTerminalNode(itemRecord.status)) {
        const mapMovedOn = record?.status !== "RUNNING" || record.attempt !== attempt;
        if (mapMovedOn && isTerminalExecution(c.execution.status))
          c.warn(
            "leftover-item",
            `left ${itemRecord.status} (attempt ${itemRecord.attempt}) after its map (${record?.status}) and execution (${c.execution.status}) ended`,
            itemId,
          );
      }
    }
    if (!life?.startSeq) continue;
    // Lanes: item j only once item j − lanes ended; never more than `lanes` RUNNING at once.
    const status = new Map<number, NodeStatus>();
    let running = 0;
    let maxRunning = 0;
    let reported = false;
    for (const w of writes) {
      const index = parseMapItemId(w.nodeId)!.index;
      const from = status.get(index);
      const to = w.after.status;
      if (to === "RUNNING" && from !== "RUNNING" && index >= life.lanes) {
        const previous = status.get(index - life.lanes);
        if (previous === undefined || !isTerminalNode(previous))
          c.v(
            "map-concurrency",
            `claimed (write ${w.seq}) while item ${index - life.lanes}, before it in its lane of ${life.lanes}, was ${previous ?? "not yet written"}`,
            w.nodeId,
          );
      }
      if (from === "RUNNING") running--;
      if (to === "RUNNING") running++;
      status.set(index, to);
      maxRunning = Math.max(maxRunning, running);
      if (running > life.lanes && !reported) {
        reported = true;
        c.v(
          "map-concurrency",
          `${running} items of attempt ${attempt} RUNNING at once (write ${w.seq}), over its ${life.lanes} lanes`,
          node.id,
        );
      }
    }
    if (maxRunning === life.lanes && life.lanes > 1)
      c.counts.mapsAtFullWidth = (c.counts.mapsAtFullWidth ?? 0) + 1;
  }

  // ── the map's end against the reference ──
  if (!record || !ref) return;
  const nv = (rule: string, message: string) => c.v(rule, message, node.id);
  const map = ref.map;
  const attempt = record.attempt;
  const life = lives.get(attempt);
  const itemIdOf = (index: number) => `${node.id}[${attempt}.${index}]`;
  if (record.status === "COMPLETED") {
    const n = life?.items ?? 0;
    c.counts.mapsCompleted = (c.counts.mapsCompleted ?? 0) + 1;
    if (n === 0) c.counts.mapsEmpty = (c.counts.mapsEmpty ?? 0) + 1;
    if (map && map.items.length !== n)
      nv("map-output", `COMPLETED over ${n} items, but the reference's list has ${map.items.length}`);
    let failed = 0;
    for (let index = 0; index < n; index++) {
      const item = c.itemRecords.get(itemIdOf(index));
      if (item?.status === "FAILED") failed++;
      else if (item?.status !== "COMPLETED")
        c.v(
          "map-item-once",
          `item ${index} of a COMPLETED map is ${item?.status ?? "not written"}, not COMPLETED or FAILED`,
          itemIdOf(index),
        );
    }
    c.counts.mapItemsTolerated = (c.counts.mapItemsTolerated ?? 0) + failed;
    if (map && failed > map.tolerated)
      nv("map-tolerance", `COMPLETED with ${failed} failed items, ${map.tolerated} tolerated`);
    if (map?.decided === "FAILED")
      nv(
        "map-tolerance",
        `COMPLETED, but the reference fails it: ${map.failures} of ${map.items.length} items failed, ${map.tolerated} tolerated`,
      );
    const done = (c.writesByNode.get(`${id}/${node.id}`) ?? [])
      .flatMap((w) => w.events)
      .findLast((e) => e.type === HISTORY.nodeCompleted);
    if (done && !isDeepStrictEqual(done.detail, { items: n, failed }))
      nv("map-output", `its NodeCompleted says ${json(done.detail)}, not {"items":${n},"failed":${failed}}`);
  }
  if (record.status === "FAILED" && record.error?.name === "MapFailed") {
    c.counts.mapsFailed = (c.counts.mapsFailed ?? 0) + 1;
    const failed = [...c.itemRecords.values()].filter((item) => {
      const r = parseMapItemId(item.nodeId);
      return (
        r?.mapId === node.id &&
        r.mapAttempt === attempt &&
        NODE_ENDS.has(item.status) &&
        item.status !== "COMPLETED"
      );
    }).length;
    if (!map) nv("map-tolerance", "FAILED with MapFailed, but the reference never gets its items");
    else {
      if (failed <= map.tolerated)
        nv("map-tolerance", `FAILED with MapFailed, with ${failed} items failed, ${map.tolerated} tolerated`);
      if (map.decided === "COMPLETED")
        nv(
          "map-tolerance",
          `FAILED with MapFailed, but the reference completes it: ${map.failures} of ${map.items.length} items failed, ${map.tolerated} tolerated`,
        );
    }
  }
  // Each item of its last attempt against the reference's.
  if (!map || map.attempt !== attempt) return;
  for (const item of map.items) {
    const itemRecord = c.itemRecords.get(item.id);
    if (!itemRecord) continue;
    const iv = (rule: string, message: string) => c.v(rule, message, item.id);
    if (itemRecord.status === "COMPLETED") {
      if (item.predicted === "FAILED") iv("map-output", `COMPLETED, but the reference fails it: ${item.why}`);
      else if (itemRecord.output === undefined) iv("map-output", "COMPLETED without an output");
      else {
        const output = await c.resolve(itemRecord.output);
        if ("error" in output) iv("map-output", `its output cannot be resolved (${output.error})`);
        else if (!isDeepStrictEqual(output.value, item.output ?? null))
          c.v(
            "map-output",
            `output ${json(output.value)} but the reference says ${json(item.output)}`,
            item.id,
          );
      }
    }
    if (itemRecord.status === "FAILED") {
      const error = itemRecord.error;
      const byHandler = ["RetryableError", "TerminalError", "ExpressionError"].includes(error?.name ?? "");
      if (byHandler && item.predicted === "COMPLETED")
        iv(
          "map-output",
          `FAILED by its handler (${error?.name}: ${error?.message}), but the reference passes it`,
        );
      const legit =
        error?.name === "DeadLettered" ||
        error?.name === "ExpressionError" ||
        error?.retryable === false ||
        itemRecord.attempt >= itemMaxAttempts;
      if (!legit)
        iv(
          "failed-node-cause",
          `FAILED on attempt ${itemRecord.attempt} of ${itemMaxAttempts} with ${error?.name} (${error?.message})`,
        );
    }
    if (itemRecord.status === "CANCELLED") c.counts.mapItemsCancelled = (c.counts.mapItemsCancelled ?? 0) + 1;
  }
}

/** An item's own life, as any node's: state machine, terminal stability, fencing, once-only events. */
function checkItemLife(
  writes: readonly NodeWrite[],
  record: NodeRecord | undefined,
  iv: (rule: string, message: string) => void,
): void {
  const events = writes.flatMap((w) => w.events);
  const count = (type: string, attempt?: number) =>
    events.filter((e) => e.type === type && (attempt === undefined || e.attempt === attempt)).length;
  if (count(HISTORY.nodeCompleted) > 1)
    iv("map-item-once", `${count(HISTORY.nodeCompleted)} NodeCompleted events`);
  const completions = writes.filter(
    (w) => w.after.status === "COMPLETED" && w.before?.status !== "COMPLETED",
  );
  if (completions.length > 1) iv("map-item-once", `${completions.length} writes completed it`);
  for (const attempt of new Set(events.map((e) => e.attempt ?? 0))) {
    if (count(HISTORY.nodeStarted, attempt) > 1)
      iv("map-item-once", `attempt ${attempt} started ${count(HISTORY.nodeStarted, attempt)} times`);
    if (count(HISTORY.nodeRetryScheduled, attempt) > 1)
      iv("map-item-once", `attempt ${attempt} scheduled ${count(HISTORY.nodeRetryScheduled, attempt)} times`);
  }
  let maxAttempt = 0;
  let terminalEvent: string | undefined;
  for (const w of writes) {
    const from: NodeStatus = w.before?.status ?? "PENDING";
    const to = w.after.status;
    if (NODE_ENDS.has(from)) iv("node-terminal-stable", `a ${w.op} write was accepted on a ${from} item`);
    else if (from !== to && !canTransitionNode(from, to)) iv("state-machine", `${from} → ${to}`);
    if (to === "SKIPPED") iv("state-machine", `${from} → SKIPPED (an item is never skipped)`);
    const cond = w.condition;
    if (cond?.leaseToken !== undefined && w.before?.lease?.token !== cond.leaseToken)
      iv(
        "superseded-write",
        `a write fenced on token ${cond.leaseToken} was accepted while the lease was ${w.before?.lease?.token ?? "none"} (attempt ${w.before?.attempt}) [${w.process}]`,
      );
    if (cond?.attempt !== undefined && w.before !== undefined && w.before.attempt !== cond.attempt)
      iv(
        "superseded-write",
        `a write for attempt ${cond.attempt} was accepted at attempt ${w.before.attempt}`,
      );
    for (const e of w.events) {
      if (terminalEvent) iv("node-terminal-stable", `${e.type} after ${terminalEvent}`);
      if (NODE_TERMINAL_EVENTS.has(e.type)) terminalEvent = e.type;
      const attempt = e.attempt ?? 0;
      if (attempt > 0 && attempt < maxAttempt)
        iv(
          "superseded-write",
          `${e.type} of attempt ${attempt} accepted after attempt ${maxAttempt} began [${w.process}]`,
        );
      maxAttempt = Math.max(maxAttempt, attempt);
    }
  }
  if (record && NODE_ENDS.has(record.status)) {
    const ends = events.filter((e) => NODE_TERMINAL_EVENTS.has(e.type));
    const expected = TERMINAL_EVENT_OF[record.status];
    if (ends.length !== 1 || ends[0]!.type !== expected)
      iv(
        "terminal-event",
        `${record.status} with terminal events [${ends.map((e) => e.type).join(", ")}], not one ${expected}`,
      );
  }
  if (record?.status === "COMPLETED") {
    const done = events.find((e) => e.type === HISTORY.nodeCompleted);
    if (done && (done.attempt !== record.attempt || record.attempt !== maxAttempt))
      iv("superseded-write", `completed by attempt ${done.attempt}; the last attempt is ${maxAttempt}`);
  }
}

/** One execution per (workflow, idempotency key), and every answer to a key as its request deserved. */
function checkKeys(executions: readonly ExecutionRecord[], keys: KeyedCreates): Violation[] {
  const violations: Violation[] = [];
  const v = (message: string, executionId?: string) =>
    violations.push({ rule: "idempotency", ...(executionId ? { executionId } : {}), message });
  const scoped = (workflow: string, key: string) => JSON.stringify([workflow, key]);
  const byKey = new Map<string, string[]>();
  for (const e of executions) {
    if (e.idempotencyKey === undefined) {
      v("created without the idempotency key its client sent", e.executionId);
      continue;
    }
    const k = scoped(e.workflow, e.idempotencyKey);
    byKey.set(k, [...(byKey.get(k) ?? []), e.executionId]);
  }
  const planned = new Set(keys.plans.map((p) => scoped(p.workflow, p.key)));
  for (const [k, ids] of byKey)
    if (!planned.has(k)) v(`executions ${ids.join(", ")} under ${k}, a key no client created with`);
  for (const [i, plan] of keys.plans.entries()) {
    const ids = byKey.get(scoped(plan.workflow, plan.key)) ?? [];
    if (ids.length > 1)
      v(`plan ${i}: ${ids.length} executions (${ids.join(", ")}) for key ${plan.key} of ${plan.workflow}`);
    for (const answer of plan.answers)
      if (answer !== ids[0])
        v(
          `plan ${i}: a create with key ${plan.key} of ${plan.workflow} was answered with ${answer}, not ${ids[0] ?? "none"}`,
        );
  }
  for (const r of keys.refused)
    v(`plan ${r.plan}: its own create (the same request) was refused: ${r.message}`);
  for (const a of keys.answered)
    v(
      `plan ${a.plan}: a create with its key but another ${a.differs} was answered with ${a.executionId}`,
      a.executionId,
    );
  return violations;
}

/** What a continue-failed node's dependants see for it: its error's name and message. */
/** What a node whose catch edge took `record`'s failure sees for it. */
function caughtErrorSeen(record: NodeRecord): unknown {
  return { error: { name: record.error?.name, message: record.error?.message, attempt: record.attempt } };
}

function errorSeen(record: NodeRecord): unknown {
  return { error: { name: record.error?.name, message: record.error?.message } };
}

function errorName(event: HistoryEvent): string | undefined {
  const error = event.detail?.error as { name?: string } | undefined;
  return error?.name;
}

function sameEvents(a: readonly HistoryEvent[], b: readonly HistoryEvent[]): boolean {
  if (a.length !== b.length) return false;
  const key = (e: HistoryEvent) => JSON.stringify([e.type, e.nodeId ?? "", e.attempt ?? -1, e.at]);
  const counts = new Map<string, number>();
  for (const e of a) counts.set(key(e), (counts.get(key(e)) ?? 0) + 1);
  for (const e of b) {
    const n = counts.get(key(e)) ?? 0;
    if (n === 0) return false;
    counts.set(key(e), n - 1);
  }
  return true;
}

function json(value: unknown): string {
  const text = JSON.stringify(value) ?? "undefined";
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** True when two execution records differ in nothing but `sweepAt` (the sweeper's bookkeeping). */
function onlySweepAtChanged(before: ExecutionRecord, after: ExecutionRecord): boolean {
  return isDeepStrictEqual({ ...before, sweepAt: undefined }, { ...after, sweepAt: undefined });
}

// ── child executions ─────────────────────────────────────────────────────────────────────────────

interface ChildFamily {
  /** Executions by id. */
  byId: ReadonlyMap<string, ExecutionRecord>;
  /** Children by their parent's node attempt (`<parent>/<node>/<attempt>`). */
  byLink: ReadonlyMap<string, string[]>;
  /** The child each node attempt's ChildStarted event names, by `<parent>/<node>/<attempt>`. */
  started: ReadonlyMap<string, string>;
  /** The inputs parents' nodes map for children (filled as parents are checked, before their children). */
  inputs: Map<string, { value: unknown }>;
  /** A loop iteration's input, by the child's id (filled as its parent is checked: loop-invariants.ts). */
  loopInputs: Map<string, { value: unknown }>;
  /** The node is a `loop` (several children per attempt, checked by loop-invariants.ts). */
  isLoop(executionId: string, nodeId: string): boolean;
  /** Its cancellation has a cause: a client asked, or (a child) its parent's node stopped waiting for it. */
  asked(executionId: string): boolean;
}

const linkKey = (executionId: string, nodeId: string, attempt: number) =>
  `${executionId}/${nodeId}/${attempt}`;
/** A node's, or a map item's (every attempt of the map maps the same inputs): by index. */
function childInputKey(executionId: string, nodeId: string): string {
  const item = parseMapItemId(nodeId);
  return item ? `${executionId}/${item.mapId}#${item.index}` : `${executionId}/${nodeId}`;
}

/**
 * The executions' family: links, and which cancellations have a cause. Sorts `executions` parents
 * first, so a child is checked after the parent whose node mapped its input.
 */
async function childFamily(input: CheckInput, executions: ExecutionRecord[]): Promise<ChildFamily> {
  executions.sort((a, b) => (a.depth ?? 0) - (b.depth ?? 0));
  const byId = new Map(executions.map((e) => [e.executionId, e]));
  const byLink = new Map<string, string[]>();
  for (const e of executions)
    if (e.parent) {
      const key = linkKey(e.parent.executionId, e.parent.nodeId, e.parent.attempt);
      byLink.set(key, [...(byLink.get(key) ?? []), e.executionId]);
    }
  const started = new Map<string, string>();
  for (const w of input.audit.nodeWrites)
    for (const e of w.events)
      if (e.type === HISTORY.childStarted && e.nodeId)
        started.set(linkKey(w.executionId, e.nodeId, e.attempt ?? 0), String(e.detail?.childExecutionId));
  // A child is the engine's to cancel once its parent's node no longer waits for it: the node
  // ended otherwise than completing with it (cancelled, failed, skipped, retried), or the parent
  // itself was asked to stop. Decided parents first.
  const cascaded = new Set<string>();
  for (const e of executions) {
    if (!e.parent) continue;
    const { executionId, nodeId, attempt } = e.parent;
    const node = await input.store.getNode(executionId, nodeId);
    const waited = node?.status === "COMPLETED" && node.attempt === attempt;
    if (!waited || input.cancelRequested.has(executionId) || cascaded.has(executionId))
      cascaded.add(e.executionId);
  }
  const isLoop = (executionId: string, nodeId: string) => {
    const workflow = byId.get(executionId)?.workflow;
    const definition = workflow === undefined ? undefined : input.definitions.get(workflow);
    return definition?.nodes.some((n) => n.id === nodeId && n.type === "loop") ?? false;
  };
  return {
    byId,
    byLink,
    started,
    inputs: new Map(),
    loopInputs: new Map(),
    isLoop,
    asked: (id) => input.cancelRequested.has(id) || cascaded.has(id),
  };
}

interface ChildCheck {
  input: CheckInput;
  counts: Record<
    | "children"
    | "childrenSucceeded"
    | "childrenFailed"
    | "childrenCancelled"
    | "orphanChildren"
    | "orphansCancelled"
    | "depthRefused"
    | "childrenOfItems",
    number
  >;
  family: ChildFamily;
  execution: ExecutionRecord;
  definition: WorkflowDefinition;
  records: ReadonlyMap<string, NodeRecord>;
  itemRecords: ReadonlyMap<string, NodeRecord>;
  v: (rule: string, message: string, nodeId?: string) => void;
  warn: (rule: string, message: string, nodeId?: string) => void;
}

/**
 * The child-execution invariants of one execution, and the children its nodes' last attempts
 * started (how they ended, their outputs), for the reference:
 *  - a child is linked to an existing parent one level up, at most CHILD_LIMITS.maxDepth deep, and
 *    it is the only child of its parent's node attempt [child-link, child-depth, child-once];
 *  - the node attempt that started it says so (ChildStarted), or it was cancelled (the node had
 *    stopped before it waited); a child no attempt waited for and left to run is a warning
 *    [child-link, orphan-child];
 *  - a `workflow` node (or item) COMPLETED only with its last attempt's child SUCCEEDED; failed
 *    with ChildWorkflowFailed only when that child FAILED, with ChildWorkflowCancelled only when it
 *    was CANCELLED, and with WorkflowDepthExceeded only at the depth limit [child-end, child-depth].
 * (Its output is the child's: the reference takes it from here, and the output rule compares.)
 */
async function checkChildren(c: ChildCheck): Promise<Map<string, ChildEnd>> {
  const { execution, family, v } = c;
  const id = execution.executionId;
  const depth = execution.depth ?? 0;
  if (execution.parent) {
    const { executionId, nodeId } = execution.parent;
    const parent = family.byId.get(executionId);
    c.counts.children++;
    if (parseMapItemId(nodeId)) c.counts.childrenOfItems++;
    if (execution.status === "SUCCEEDED") c.counts.childrenSucceeded++;
    if (execution.status === "FAILED") c.counts.childrenFailed++;
    if (execution.status === "CANCELLED") c.counts.childrenCancelled++;
    if (!parent) v("child-link", `its parent ${executionId} does not exist`);
    else if (depth !== (parent.depth ?? 0) + 1)
      v("child-depth", `at depth ${depth} under a parent at depth ${parent.depth ?? 0}`);
    if (depth > CHILD_MAX_DEPTH) v("child-depth", `at depth ${depth}, over the limit ${CHILD_MAX_DEPTH}`);
  }
  // A loop's iterations share their attempt's link and only the first is named by ChildStarted:
  // loop-invariants.ts checks them (one per iteration, 1..n), not the one-child rules here.
  if (execution.parent && !family.isLoop(execution.parent.executionId, execution.parent.nodeId)) {
    const { executionId, nodeId, attempt } = execution.parent;
    const siblings = family.byLink.get(linkKey(executionId, nodeId, attempt)) ?? [];
    if (siblings.length > 1)
      v(
        "child-once",
        `attempt ${attempt} of ${nodeId} started ${siblings.length} children: ${siblings.join(", ")}`,
      );
    const named = family.started.get(linkKey(executionId, nodeId, attempt));
    if (named !== undefined && named !== id)
      v("child-link", `attempt ${attempt} of ${nodeId} waited for ${named}, not this child`);
    else if (named === undefined) {
      c.counts.orphanChildren++;
      if (execution.status === "CANCELLED" && /no longer waits for it/.test(execution.error?.message ?? ""))
        c.counts.orphansCancelled++;
      else if (execution.status !== "CANCELLED")
        c.warn(
          "orphan-child",
          `attempt ${attempt} of ${nodeId} never waited for it (its attempt was lost first); it ended ${execution.status} before the sweeper cancelled it`,
        );
    }
  }
  const ends = new Map<string, ChildEnd>();
  const definitions = new Map(c.definition.nodes.map((n) => [n.id, n]));
  const callsChild = (nodeId: string): boolean => {
    const item = parseMapItemId(nodeId);
    if (!item) return definitions.get(nodeId)?.type === "workflow";
    const map = definitions.get(item.mapId);
    return map?.type === "map" && (map.params as { workflow?: unknown } | undefined)?.workflow !== undefined;
  };
  for (const record of [...c.records.values(), ...c.itemRecords.values()]) {
    if (!callsChild(record.nodeId)) continue;
    const childId = family.started.get(linkKey(id, record.nodeId, record.attempt));
    const child = childId === undefined ? undefined : family.byId.get(childId);
    if (childId !== undefined && !child)
      v("child-link", `attempt ${record.attempt} waited for ${childId}, which does not exist`, record.nodeId);
    if (child) {
      let output: unknown;
      if (child.status === "SUCCEEDED") {
        const view = await c.input.engine.describeExecution(child.executionId).catch(() => undefined);
        output = view?.output;
      }
      ends.set(record.nodeId, {
        executionId: child.executionId,
        status: child.status,
        ...(output !== undefined ? { output } : {}),
      });
    }
    const error = record.error?.name;
    const nv = (message: string) => v("child-end", message, record.nodeId);
    if (record.status === "COMPLETED" && child?.status !== "SUCCEEDED")
      nv(`COMPLETED, but its last attempt's child ${childId ?? "(none)"} is ${child?.status ?? "missing"}`);
    if (record.status === "FAILED" && error === "ChildWorkflowFailed" && child?.status !== "FAILED")
      nv(`failed with ChildWorkflowFailed, but its last attempt's child is ${child?.status ?? "missing"}`);
    if (record.status === "FAILED" && error === "ChildWorkflowCancelled" && child?.status !== "CANCELLED")
      nv(`failed with ChildWorkflowCancelled, but its last attempt's child is ${child?.status ?? "missing"}`);
    if (error === "WorkflowDepthExceeded") c.counts.depthRefused++;
    if (error === "WorkflowDepthExceeded" && depth < CHILD_MAX_DEPTH)
      v(
        "child-depth",
        `refused a child at depth ${depth}, under the limit ${CHILD_MAX_DEPTH}`,
        record.nodeId,
      );
  }
  return ends;
}

/** How deep executions may nest: the checker's own statement of CHILD_LIMITS.maxDepth. */
const CHILD_MAX_DEPTH = 8;

// ── external workers and callbacks ───────────────────────────────────────────────────────────────

/**
 * How a `callback` node's last attempt was ended by its settler, for the reference: the write that
 * ended the attempt's wait names the settler's call (its actor), and the settler recorded what that
 * call sent. Undefined when no settlement ended it (it timed out, was cancelled, never waited).
 */
function callbackEndOf(
  record: NodeRecord | undefined,
  writes: readonly NodeWrite[],
  settlements: ReadonlyMap<number, Settlement>,
): CallbackEnd | undefined {
  if (!record) return undefined;
  const end = writes.find(
    (w) =>
      w.before?.status === "RUNNING" &&
      w.before.attempt === record.attempt &&
      w.before.composite?.kind === "callback" &&
      !(w.after.status === "RUNNING" && w.after.attempt === record.attempt),
  );
  if (end?.actor?.who !== "settler") return undefined;
  const settlement = settlements.get(end.actor.callId);
  if (settlement?.kind === "complete") return { status: "COMPLETED", output: settlement.output ?? null };
  if (settlement?.kind === "fail" && settlement.error)
    return { status: "FAILED", error: { name: settlement.error.name, message: settlement.error.message } };
  return undefined;
}

type ExternalCount =
  | "externalClaims"
  | "placementsChecked"
  | "claimsAtFullCapacity"
  | "tokenWritesChecked"
  | "callbacksCompleted"
  | "callbacksFailed"
  | "callbacksTimedOut"
  | "settlementsChecked"
  | "reportsWithoutEffect"
  | "claimsAtNodeLimit";

/** The checker's own statement of the placement rule (domain/placement.ts placementRefusal). */
function placementBreach(runsOn: RunsOn, worker: WorkerRecord): string | undefined {
  if (worker.pool !== runsOn.pool) return `it is in pool ${worker.pool}, the node in ${runsOn.pool}`;
  for (const executor of runsOn.executors ?? [])
    if (!worker.executors.includes(executor)) return `it lacks the executor ${executor}`;
  for (const [name, value] of Object.entries(runsOn.capabilities ?? {}))
    if (worker.capabilities[name] !== value)
      return `its capability ${name} is ${worker.capabilities[name] ?? "absent"}, not ${value}`;
  for (const label of runsOn.labels ?? [])
    if (!worker.labels.includes(label)) return `it lacks the label ${label}`;
  if (runsOn.allowedWorkers !== undefined && !runsOn.allowedWorkers.includes(worker.workerId))
    return `it is not among the allowed workers ${runsOn.allowedWorkers.join(", ")}`;
  if (runsOn.forbiddenWorkers?.includes(worker.workerId)) return "it is a forbidden worker";
  return undefined;
}

/**
 * The external workers' and callbacks' rules, over the audit log in true write order:
 *  - [external-fence] every write a worker's task call (heartbeat, complete, fail) made to its
 *    task's node was to the attempt the token names, RUNNING under the token's lease (held by that
 *    worker), and fenced on that token;
 *  - [placement] every claim of a node placed with `runsOn` is a worker's, registered at that
 *    moment and satisfying the placement (the rule restated here); a node not placed is never
 *    claimed by a worker; every handler run of a placed node is on an external worker, and of
 *    another node never;
 *  - [worker-limits] replaying claims and ends in write order, no worker ever runs more attempts
 *    than its registration's maxParallel, nor more of one node (across executions) than the node's
 *    maxParallelPerWorker;
 *  - [callback-once] every write a settler's call made to its callback's node was to the attempt
 *    its token names, waiting under the token's lease, and fenced on it; a callback completes only
 *    by its settler's completion with the token of its attempt; no attempt is settled (answered)
 *    twice;
 *  - [callback-answer] a settlement answered as accepted was written.
 */
function checkExternals(
  input: CheckInput,
  executions: readonly ExecutionRecord[],
  counts: Record<ExternalCount, number>,
): Violation[] {
  const violations: Violation[] = [];
  const v = (rule: string, message: string, executionId?: string, nodeId?: string) =>
    violations.push({
      rule,
      ...(executionId ? { executionId } : {}),
      ...(nodeId ? { nodeId } : {}),
      message,
    });
  const workflowOf = new Map(executions.map((e) => [e.executionId, e.workflow]));
  const nodeDefinition = (executionId: string, nodeId: string) => {
    const workflow = workflowOf.get(executionId);
    const definition = workflow === undefined ? undefined : input.definitions.get(workflow);
    return definition?.nodes.find((n) => n.id === nodeId);
  };
  const writes = input.audit.nodeWrites;
  // Registrations in write order: the one in force at a seq.
  const registrations = new Map<string, Array<{ seq: number; record: WorkerRecord | undefined }>>();
  for (const w of input.audit.workerWrites)
    registrations.set(w.workerId, [
      ...(registrations.get(w.workerId) ?? []),
      { seq: w.seq, record: w.record },
    ]);
  const registrationAt = (workerId: string, seq: number) =>
    (registrations.get(workerId) ?? []).findLast((r) => r.seq < seq)?.record;

  // [external-fence], [callback-once]: writes made with a token.
  const written = new Set<number>();
  for (const w of writes) {
    const actor = w.actor;
    const token = actor?.token;
    if (!actor || !token || token.executionId !== w.executionId || token.nodeId !== w.nodeId) continue;
    written.add(actor.callId);
    const settler = actor.who === "settler";
    const rule = settler ? "callback-once" : "external-fence";
    if (!settler) counts.tokenWritesChecked++;
    const before = w.before;
    const held =
      before?.status === "RUNNING" &&
      before.attempt === token.attempt &&
      before.lease?.token === token.leaseToken &&
      w.condition?.leaseToken === token.leaseToken;
    if (!held)
      v(
        rule,
        `a ${actor.call} with the token of attempt ${token.attempt} (lease ${token.leaseToken}) by ${actor.who} was accepted (write ${w.seq}, ${before?.status ?? "no record"} → ${w.after.status}) while the node was ${before?.status ?? "unwritten"} at attempt ${before?.attempt} under lease ${before?.lease?.token ?? "none"}, fenced on ${w.condition?.leaseToken ?? "no token"}`,
        w.executionId,
        w.nodeId,
      );
    else if (!settler && before.lease?.workerId !== actor.who)
      v(
        rule,
        `${actor.who}'s ${actor.call} was accepted (write ${w.seq}) on an attempt leased to ${before.lease?.workerId ?? "the Lambda worker"}`,
        w.executionId,
        w.nodeId,
      );
    else if (settler && before.composite?.kind !== "callback")
      v(
        rule,
        `a ${actor.call} was accepted (write ${w.seq}) on an attempt not waiting for a callback`,
        w.executionId,
        w.nodeId,
      );
  }

  // [callback-once]: completions of callbacks by their settler's token, one answer per attempt.
  for (const w of writes) {
    const before = w.before;
    if (
      before?.status !== "RUNNING" ||
      before.composite?.kind !== "callback" ||
      w.after.status !== "COMPLETED"
    )
      continue;
    counts.callbacksCompleted++;
    const token = w.actor?.token;
    if (
      w.actor?.call !== "callback-complete" ||
      token?.attempt !== before.attempt ||
      token.leaseToken !== before.lease?.token
    )
      v(
        "callback-once",
        `attempt ${before.attempt} completed (write ${w.seq}) by ${w.actor ? `${w.actor.who}'s ${w.actor.call}` : w.process}, not by a settlement with its token`,
        w.executionId,
        w.nodeId,
      );
  }
  for (const w of writes)
    if (w.patch?.error?.name === "CallbackTimedOut" && w.before?.status === "RUNNING")
      counts.callbacksTimedOut++;
  const answered = new Map<string, Settlement[]>();
  for (const s of input.externals?.settlements ?? []) {
    if (s.kind === "heartbeat") continue;
    counts.settlementsChecked++;
    if (s.answer === "ok" && s.kind === "fail") counts.callbacksFailed++;
    if (s.answer !== "ok") continue;
    const key = `${s.executionId}/${s.nodeId}#${s.attempt}`;
    // Answered as accepted twice, both written (one answered without a write is the rule below's).
    if (written.has(s.callId)) answered.set(key, [...(answered.get(key) ?? []), s]);
    if (!written.has(s.callId))
      v(
        "callback-answer",
        `the settler's ${s.kind} of attempt ${s.attempt} was answered as accepted, yet nothing was written`,
        s.executionId,
        s.nodeId,
      );
  }
  // [report-answer] a worker's report answered as accepted was written too (one whose attempt ended
  // between the read of its token and its write is answered 409, as a stale token is).
  for (const r of input.externals?.reports ?? [])
    if (r.answer === "ok" && !written.has(r.callId)) {
      counts.reportsWithoutEffect++;
      v(
        "report-answer",
        `worker ${r.workerId}'s ${r.kind} of attempt ${r.token.attempt} was answered as accepted, yet nothing was written`,
        r.token.executionId,
        r.token.nodeId,
      );
    }
  for (const [key, list] of answered)
    if (list.length > 1)
      v(
        "callback-once",
        `${key} was settled ${list.length} times, each answered as accepted and written (${list.map((s) => s.kind).join(", ")})`,
        list[0]!.executionId,
        list[0]!.nodeId,
      );

  // [placement], [worker-limits]: claims in write order, and what each worker runs at each one.
  const runs = new Map<string, Map<string, { attempt: number; slot: string }>>();
  const reported = new Set<string>();
  for (const w of writes) {
    if (parseMapItemId(w.nodeId)) continue;
    const { before, after } = w;
    const key = `${w.executionId}/${w.nodeId}`;
    const heldBefore = before?.status === "RUNNING" ? before.lease?.workerId : undefined;
    const heldAfter = after.status === "RUNNING" ? after.lease?.workerId : undefined;
    const same = heldBefore !== undefined && heldBefore === heldAfter && before?.attempt === after.attempt;
    if (heldBefore !== undefined && !same) runs.get(heldBefore)?.delete(key);
    const claimed = after.status === "RUNNING" && before?.status !== "RUNNING";
    const node = nodeDefinition(w.executionId, w.nodeId);
    const runsOn = node?.runsOn;
    if (claimed && runsOn && heldAfter === undefined)
      v(
        "placement",
        `claimed by the Lambda worker (write ${w.seq}), though placed on ${runsOn.pool}`,
        w.executionId,
        w.nodeId,
      );
    if (heldAfter === undefined || same) continue;
    counts.externalClaims++;
    if (!runsOn) {
      v(
        "placement",
        `claimed by worker ${heldAfter} (write ${w.seq}), though not placed on workers`,
        w.executionId,
        w.nodeId,
      );
      continue;
    }
    const started = w.events.find((e) => e.type === HISTORY.nodeStarted);
    if (started?.detail?.workerId !== heldAfter)
      v(
        "placement",
        `claimed for ${heldAfter}, its NodeStarted naming ${String(started?.detail?.workerId)}`,
        w.executionId,
        w.nodeId,
      );
    if (w.actor && (w.actor.who !== heldAfter || w.actor.call !== "poll"))
      v("placement", `claimed for ${heldAfter} by ${w.actor.who}'s ${w.actor.call}`, w.executionId, w.nodeId);
    const worker = registrationAt(heldAfter, w.seq);
    if (!worker) {
      v(
        "placement",
        `claimed (write ${w.seq}) by ${heldAfter}, which was not registered then`,
        w.executionId,
        w.nodeId,
      );
      continue;
    }
    counts.placementsChecked++;
    const breach = placementBreach(runsOn, worker);
    if (breach)
      v(
        "placement",
        `claimed (write ${w.seq}) by ${heldAfter}, which may not run it: ${breach} (runsOn ${JSON.stringify(runsOn)})`,
        w.executionId,
        w.nodeId,
      );
    const slot = `${workflowOf.get(w.executionId)}/${w.nodeId}`;
    const mine = runs.get(heldAfter) ?? new Map<string, { attempt: number; slot: string }>();
    runs.set(heldAfter, mine);
    mine.set(key, { attempt: after.attempt, slot });
    if (mine.size === worker.maxParallel) counts.claimsAtFullCapacity++;
    if (mine.size > worker.maxParallel && !reported.has(heldAfter)) {
      reported.add(heldAfter);
      v(
        "worker-limits",
        `${heldAfter} runs ${mine.size} attempts at once (write ${w.seq}: ${[...mine.keys()].join(", ")}), over its maxParallel ${worker.maxParallel}`,
        w.executionId,
        w.nodeId,
      );
    }
    const inSlot = [...mine.values()].filter((r) => r.slot === slot).length;
    const limit = runsOn.maxParallelPerWorker;
    if (limit !== undefined && inSlot === limit) counts.claimsAtNodeLimit++;
    if (limit !== undefined && inSlot > limit && !reported.has(`${heldAfter} ${slot}`)) {
      reported.add(`${heldAfter} ${slot}`);
      v(
        "worker-limits",
        `${heldAfter} runs ${inSlot} attempts of ${slot} at once (write ${w.seq}), over its maxParallelPerWorker ${limit}`,
        w.executionId,
        w.nodeId,
      );
    }
  }
  for (const run of input.handlerRuns ?? []) {
    if (parseMapItemId(run.nodeId) || run.process === undefined) continue;
    const placed = nodeDefinition(run.executionId, run.nodeId)?.runsOn !== undefined;
    if (placed !== (run.process === "external"))
      v(
        "placement",
        `attempt ${run.attempt}'s handler ran in a ${run.process} process, though the node is ${placed ? "" : "not "}placed on external workers`,
        run.executionId,
        run.nodeId,
      );
  }
  return violations;
}
