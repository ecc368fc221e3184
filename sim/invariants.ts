/**
 * The invariants checked after every run, from the final store state, each execution's history,
 * and the audit log of accepted writes (in true write order):
 *
 *  - every execution reaches a terminal state, and terminal states never change (executions and nodes);
 *  - no node completes twice; each child is queued once (≤ 1 NodeQueued), each attempt starts and is
 *    retried at most once; each parent arrives at each child at most once;
 *  - a fan-in never fires before its condition (okDeps ≥ required when it leaves PENDING for QUEUED,
 *    or for COMPLETED when inline; every ok arrival follows its parent's completion) nor more than
 *    once;
 *  - no write from a superseded attempt is accepted (fenced writes match the live token and attempt;
 *    no event of attempt k after attempt k+1 began; the completed attempt is the last one);
 *  - node status changes follow the state machine;
 *  - every completed node's output, and a SUCCEEDED execution's output, equal the reference evaluator's
 *    once resolved (payloads loaded from the blob store), and the execution's input resolves to
 *    exactly what its client sent (-0, ±Infinity and "__proto__" keys included);
 *  - every blob any accepted payload refers to (inputs and outputs, through `parts`) is in the blob
 *    store with exactly its `bytes`, its text hashes to its `sha256`, and its key is that hash under
 *    its execution's prefix (content addressing);
 *  - payloads take the form the inline threshold gives them (Payloads.saveJson / compose): inline
 *    text is at most `inlineBytes` bytes and a blob more; `parts` only as the output of a node that
 *    composes its dependencies (merge), keeping at least one member that is not inline, no wider
 *    than `maxPartsBytes` stored, its members exactly its dependencies' stored outputs — a
 *    composition of inline members only is joined into one text and held to the threshold like any
 *    value; and the stored form decodes to the payload it encodes;
 *  - an execution ends CANCELLED only when cancelled, FAILED only with a node that failed for good
 *    (attempts exhausted, non-retryable, dead-lettered), and a node that failed for good while its
 *    execution ran ends that execution FAILED (or CANCELLED by a racing request);
 *  - the store's history holds exactly the events of the accepted writes;
 *  - idempotency keys (per workflow): at most one execution per (workflow, key), each of a key a
 *    client created with; every answer to a client's creates names that one execution; a create
 *    with the key but another input or start flag is refused (never answered with an execution,
 *    so it never creates one), and the same request never is.
 *
 * Warnings (reported, not failures): nodes left QUEUED or RUNNING in a finished execution.
 */
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type { WorkflowDefinition } from "../shared/domain/definition.js";
import { requiredCompletions } from "../shared/domain/fan-in.js";
import { compileGraph, type WorkflowGraph } from "../shared/domain/graph.js";
import {
  blobKey,
  blobsOf,
  decodeStoredPayload,
  encodeStoredPayload,
  type Payload,
  storedBytes,
} from "../shared/domain/payload.js";
import type { ExecutionRecord, HistoryEvent, NodeRecord, NodeStatus } from "../shared/domain/records.js";
import { canTransitionNode, isTerminalExecution, isTerminalNode } from "../shared/domain/states.js";
import type { Engine } from "../shared/engine/engine.js";
import { HISTORY } from "../shared/engine/lifecycle.js";
import { Payloads } from "../shared/engine/payloads.js";
import type { BlobStore, Store } from "../shared/ports.js";
import type { AuditStore, NodeWrite } from "./audit-store.js";
import { referenceOutputs } from "./reference.js";

export interface Violation {
  rule: string;
  executionId?: string;
  nodeId?: string;
  message: string;
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
]);
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
  const counts = { outputsInline: 0, outputsBlob: 0, outputsParts: 0, inputsBlob: 0 };
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

  violations.push(...checkKeys(executions, input.keys));

  const writesByNode = new Map<string, NodeWrite[]>();
  for (const write of input.audit.nodeWrites) {
    const key = `${write.executionId}/${write.nodeId}`;
    writesByNode.set(key, [...(writesByNode.get(key) ?? []), write]);
  }

  for (const execution of executions) {
    const id = execution.executionId;
    const v = (rule: string, message: string, nodeId?: string) =>
      violations.push({ rule, executionId: id, ...(nodeId ? { nodeId } : {}), message });
    const definition = input.definitions.get(execution.workflow);
    const graph = graphs.get(execution.workflow);
    if (!definition || !graph) {
      v("unknown-workflow", `workflow ${execution.workflow} is not one the simulation registered`);
      continue;
    }

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
    const history = await input.store.listHistory(id);
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
    const idOf = (index: number) => graph.nodes[index]!.id;

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
            const depOutput = records.get(key)?.output;
            if (!dep || !node.parents.includes(dep.index))
              v("payload-form", `its parts hold ${key}, not a dependency`, node.id);
            else if (depOutput === undefined || !isDeepStrictEqual(part, depOutput))
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
    const sent = input.inputs.get(execution.workflow) ?? null;
    const storedInput = await resolve(execution.input);
    if ("error" in storedInput) v("input", `the input cannot be resolved (${storedInput.error})`);
    else if (!isDeepStrictEqual(storedInput.value, sent))
      v("input", `the input resolves to ${json(storedInput.value)}, but the client sent ${json(sent)}`);
    const completionSeq = new Map<string, number>();
    const badSeq = new Map<string, number>();
    for (const node of graph.nodes) {
      for (const w of writesByNode.get(`${id}/${node.id}`) ?? []) {
        if (w.after.status === "COMPLETED" && w.before?.status !== "COMPLETED" && !completionSeq.has(node.id))
          completionSeq.set(node.id, w.seq);
        if ((w.after.status === "FAILED" || w.after.status === "CANCELLED") && !badSeq.has(node.id))
          badSeq.set(node.id, w.seq);
      }
    }

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
        const { parentIndex, outcome } = w.arrival;
        if (arrived.has(parentIndex)) nv("arrival-once", `parent ${idOf(parentIndex)} arrived twice`);
        arrived.add(parentIndex);
        if (!node.parents.includes(parentIndex))
          nv("fan-in", `arrival from ${idOf(parentIndex)}, not a parent`);
        const parentSeq = (outcome === "ok" ? completionSeq : badSeq).get(idOf(parentIndex));
        if (parentSeq === undefined || parentSeq > w.seq)
          nv(
            "fan-in",
            `${outcome} arrival from ${idOf(parentIndex)} before that parent ${outcome === "ok" ? "completed" : "failed"}`,
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
        const parentSeq = completionSeq.get(idOf(w.parentIndex));
        if (parentSeq === undefined || parentSeq > w.seq)
          nv("fan-in", `shard arrival from ${idOf(w.parentIndex)} before that parent completed`);
      }

      // fan-in: leaving PENDING for QUEUED needs enough completed dependencies, once
      const required = node.parents.length === 0 ? 0 : requiredCompletions(node.fanIn, node.parents.length);
      for (const w of writes) {
        if ((w.before?.status ?? "PENDING") === "PENDING" && w.after.status === "RUNNING") {
          // A direct or join node's claim straight from PENDING: at most one parent, or an `all`
          // fan-in, with every parent completed before it; or an `any`/`count:N` one, with the
          // dependencies its message carried recorded, enough and each completed before it.
          const inputs = node.parents.length > 1 && node.fanIn.kind !== "all" ? w.after.okDeps : node.parents;
          if (inputs.length < required)
            nv("fan-in", `claimed from PENDING with ${inputs.length} of ${required} required dependencies`);
          if (inputs.some((p) => !node.parents.includes(p)))
            nv("fan-in", `claimed with okDeps ${inputs} including a non-parent`);
          for (const parent of inputs)
            if ((completionSeq.get(idOf(parent)) ?? Number.POSITIVE_INFINITY) > w.seq)
              nv("fan-in", `claimed before its dependency ${idOf(parent)} completed`);
          continue;
        }
        // The decision: PENDING → QUEUED, or PENDING → COMPLETED for an inline node run on the spot.
        const decided = w.after.status === "QUEUED" || w.after.status === "COMPLETED";
        if ((w.before?.status ?? "PENDING") !== "PENDING" || !decided) continue;
        const ok = w.after.okDeps;
        if (ok.length < required)
          nv("fan-in", `queued with ${ok.length} of ${required} required dependencies`);
        if (ok.some((p) => !node.parents.includes(p))) nv("fan-in", `okDeps ${ok} include a non-parent`);
        for (const p of ok) {
          const seq = completionSeq.get(idOf(p));
          if (seq === undefined || seq > w.seq)
            nv("fan-in", `queued counting ${idOf(p)} before it completed`);
        }
      }

      // state machine, terminal stability, fencing
      let maxAttempt = 0;
      let terminalEvent: string | undefined;
      for (const w of writes) {
        const from: NodeStatus = w.before?.status ?? "PENDING";
        const to = w.after.status;
        // A redrive revives a FAILED or CANCELLED node: to QUEUED (a new attempt) or PENDING.
        const revival = w.events.some((e) => e.type === HISTORY.nodeRedriven);
        if (revival) {
          if ((from !== "FAILED" && from !== "CANCELLED") || (to !== "QUEUED" && to !== "PENDING"))
            nv("state-machine", `redriven ${from} → ${to}`);
          terminalEvent = undefined;
        } else if (isTerminalNode(from))
          nv("node-terminal-stable", `a ${w.op} write was accepted on a ${from} node`);
        else if (from !== to && !canTransitionNode(from, to)) nv("state-machine", `${from} → ${to}`);
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

      // a node that failed for good: for a reason, and (while the execution ran) failing it
      if (record?.status === "FAILED") {
        const error = record.error;
        const legit =
          error?.name === "DeadLettered" ||
          error?.retryable === false ||
          record.attempt >= node.retry.maxAttempts;
        if (!legit)
          nv(
            "failed-node-cause",
            `FAILED on attempt ${record.attempt} of ${node.retry.maxAttempts} with ${error?.name} (${error?.message})`,
          );
        const failure = writes.findLast((w) => w.after.status === "FAILED");
        if (failure?.executionStatus === "RUNNING") {
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

    // ── outputs against the reference evaluator ───────────────────────────────────────────────
    const reference = referenceOutputs(definition, {
      input: sent,
      okDepsOf: (nodeId) => {
        const node = graph.byId.get(nodeId)!;
        const record = records.get(nodeId);
        // Direct nodes (at most one parent) record no arrivals: their deps are their parents.
        if (node.fanIn.kind === "all" || node.parents.length <= 1 || !record) return node.parents.map(idOf);
        return record.okDeps.map(idOf);
      },
      passingAttemptOf: (nodeId, times) => {
        const record = records.get(nodeId);
        return lostAttempts.get(nodeId) && record ? record.attempt : times + 1;
      },
    });
    for (const record of records.values()) {
      if (record.status !== "COMPLETED") continue;
      const expected = reference.get(record.nodeId);
      if (record.output === undefined) {
        v("output", "COMPLETED without an output", record.nodeId);
        continue;
      }
      const output = await resolve(record.output);
      if ("error" in output)
        v("output", `the output ${json(record.output)} cannot be resolved (${output.error})`, record.nodeId);
      else if (!isDeepStrictEqual(output.value, expected))
        v("output", `output ${json(output.value)} but the reference says ${json(expected)}`, record.nodeId);
    }

    switch (execution.status) {
      case "SUCCEEDED": {
        for (const sink of graph.sinks)
          if (records.get(idOf(sink))?.status !== "COMPLETED")
            v(
              "succeeded-sinks",
              `SUCCEEDED with sink ${idOf(sink)} ${records.get(idOf(sink))?.status ?? "never run"}`,
            );
        const expected = Object.fromEntries(graph.sinks.map((s) => [idOf(s), reference.get(idOf(s))]));
        const view = await input.engine.describeExecution(id).catch((error: unknown) => error as Error);
        if (view instanceof Error)
          v("execution-output", `describing it failed (${view.name}: ${view.message})`);
        else {
          if (!isDeepStrictEqual(view.output, expected))
            v("execution-output", `output ${json(view.output)} but the reference says ${json(expected)}`);
          if (!isDeepStrictEqual(view.input, sent))
            v("input", `described with the input ${json(view.input)}, but the client sent ${json(sent)}`);
        }
        break;
      }
      case "FAILED":
        if (![...records.values()].some((r: NodeRecord) => r.status === "FAILED"))
          v("failed-without-cause", "FAILED with no failed node");
        break;
      case "CANCELLED":
        if (!input.cancelRequested.has(id)) v("cancel", "CANCELLED though nobody asked");
        break;
      default:
        break;
    }
    if (input.cancelAccepted.has(id) && execution.status !== "CANCELLED")
      v("cancel", `a cancel was accepted, yet it ended ${execution.status}`);
    if (failedForGood && execution.status === "RUNNING")
      v("fail-fast", "a node failed for good, yet it still runs");
  }
  return { violations, warnings, counts };
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
