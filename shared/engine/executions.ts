/** Creating, triggering and describing executions. The API only records and dispatches; it never waits. */

import { callbackToken } from "../domain/attempt-token.js";
import { badRequest, conflict, notFound, RequestError } from "../domain/errors.js";
import { parseExact } from "../domain/exact-numbers.js";
import { descendantsExceeded, rootOf } from "../domain/fan-out.js";
import type { WorkflowGraph } from "../domain/graph.js";
import { jsonTextDepth, PayloadError } from "../domain/json.js";
import { nodeShardsOf } from "../domain/node-shards.js";
import { composePayload, NULL_PAYLOAD, type Payload, UPLOAD_PREFIX } from "../domain/payload.js";
import {
  childExecutionOf,
  type ExecutionRecord,
  type NodeRecord,
  type NodeStatus,
} from "../domain/records.js";
import { isTerminalExecution } from "../domain/states.js";
import { executionTrace, startTrace } from "../domain/trace.js";
import { VARS_TASK_TYPE } from "../domain/vars.js";
import type { EngineContext } from "./context.js";
import { continuedFailure } from "./dep-outputs.js";
import { dispatchMode } from "./dispatch-mode.js";
import { armDeadline } from "./execution-deadline.js";
import { keyConflict, keyedRequest } from "./idempotency.js";
import { executionEvent, executionLifecycleEvent, HISTORY, traced } from "./lifecycle.js";
import { PayloadRenderer, type RenderedPayload, type ViewOptions } from "./payload-views.js";
import type { Propagation } from "./propagation.js";
import { admitStart } from "./rate-limits.js";
import { readVariablesSized } from "./vars.js";
import type {
  CreateExecutionRequest,
  ExecutionSummary,
  ExecutionView,
  MapProgress,
  NodeView,
  UploadTicket,
} from "./views.js";
import { getWorkflow } from "./workflows.js";

/** How long an upload URL of `POST /payloads` stays valid. */
const UPLOAD_URL_SECONDS = 900;

/**
 * A create, with the W3C `traceparent` the execution is started in (domain/trace.ts): the one
 * `POST /executions` carried, or a child's parent attempt's. Absent or malformed: a new trace.
 */
export type TracedCreateRequest = CreateExecutionRequest & {
  traceparent?: string;
  /** A child's root execution (domain/fan-out.ts), whose budget it is counted against. */
  rootExecutionId?: string;
};

export class Executions {
  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
  ) {}

  async create(request: TracedCreateRequest): Promise<ExecutionSummary> {
    const workflow = await getWorkflow(this.ctx, request.workflow, request.version);
    // A client's start past the workflow's rate limit is refused before anything is written (a
    // child, started by its parent's node, is not a client's start).
    if (!request.parent && workflow.definition.rateLimit !== undefined)
      await admitStart(this.ctx, workflow.definition, () => this.requestInput(request));
    const executionId = this.ctx.ids.executionId();
    const input =
      request.inputRef === undefined
        ? await this.ctx.payloads.save(executionId, request.input ?? null, "execution input")
        : await this.uploadedInput(executionId, request.inputRef);
    const now = this.ctx.clock.now();
    const start = request.start ?? true;
    const key = request.idempotencyKey;
    const graph = await this.ctx.graphs.get(workflow.name, workflow.version);
    // Entries dispatched by their messages alone (the common start: not keyed, not a child) are sent
    // before the record is written, so a start that dies in between leaves messages for an execution
    // that never was (the worker drops them, worker.ts), never an execution that nobody runs: it
    // needs no first look from the sweeper, and so no entry in its index (two index writes).
    const sendFirst = start && key === undefined && !request.parent && entriesByMessage(this.ctx, graph);
    const nodeShards = nodeShardsOf(graph);
    const record: ExecutionRecord = {
      executionId,
      workflow: workflow.name,
      version: workflow.version,
      status: start ? "RUNNING" : "PENDING",
      input,
      createdAt: now,
      sinksDone: [],
      ...(start
        ? {
            startedAt: now,
            ...(sendFirst ? {} : { sweepAt: now + this.ctx.sweep.firstCheckMs }),
            ...deadlineOf(workflow.definition.timeoutSeconds, now),
          }
        : {}),
      ...(request.idempotencyKey !== undefined ? { idempotencyKey: request.idempotencyKey } : {}),
      ...(request.parent
        ? {
            parent: request.parent,
            depth: request.depth ?? 1,
            rootExecutionId: request.rootExecutionId ?? request.parent.executionId,
          }
        : {}),
      // Derived, never drawn from the ids port (domain/trace.ts says why).
      trace: startTrace(executionId, request.traceparent),
      // Fixed for its life: the store derives every key of its nodes from it.
      ...(nodeShards > 1 ? { nodeShards } : {}),
    };
    const keyed = key === undefined ? undefined : keyedRequest(input, start);
    if (sendFirst) {
      await armDeadline(this.ctx, record);
      await this.propagation.startEntries(record, graph);
    }
    // A child counts against its root's fan-out budget, in the write that creates it.
    const budget = request.parent ? { limit: this.ctx.fanOut.maxDescendants, now } : undefined;
    const created = await this.ctx.store.createExecution(
      record,
      traced(
        executionEvent(this.ctx, start ? HISTORY.executionStarted : HISTORY.executionCreated, now),
        executionTrace(record),
      ),
      keyed,
      budget,
    );
    if ("overBudget" in created)
      throw descendantsExceeded(request.parent!.nodeId, rootOf(record), this.ctx.fanOut.maxDescendants);
    if (!created.created) {
      // Only a keyed create finds its key taken: the same request gets the execution, another a 409.
      // A child's key is its parent attempt's: whatever it asked, that attempt's child is the one.
      if (key !== undefined && keyed !== undefined && !request.parent) {
        const asked = { ...keyed, ...(request.version !== undefined ? { version: request.version } : {}) };
        const refused = keyConflict(key, asked, created.existing, created.keyed);
        if (refused) throw refused;
      }
      return { executionId: created.existing.executionId, status: created.existing.status, created: false };
    }
    if (sendFirst) await this.ctx.events.publish([executionLifecycleEvent(record)]);
    else if (start) await this.start(record);
    return { executionId: record.executionId, status: record.status, created: true };
  }

  async trigger(
    executionId: string,
    given: { input?: unknown; inputRef?: string } = {},
  ): Promise<ExecutionSummary> {
    const current = await this.ctx.store.getExecution(executionId);
    if (!current) throw notFound(`execution "${executionId}" does not exist`);
    const input =
      given.inputRef !== undefined
        ? await this.uploadedInput(executionId, given.inputRef)
        : given.input !== undefined
          ? await this.ctx.payloads.save(executionId, given.input, "execution input")
          : undefined;
    const graph = await this.ctx.graphs.get(current.workflow, current.version);
    const now = this.ctx.clock.now();
    const started = await this.ctx.store.transitionExecution(
      executionId,
      ["PENDING"],
      {
        status: "RUNNING",
        startedAt: now,
        sweepAt: now + this.ctx.sweep.firstCheckMs,
        ...(input !== undefined ? { input } : {}),
        ...deadlineOf(graph.definition.timeoutSeconds, now),
      },
      traced(executionEvent(this.ctx, HISTORY.executionStarted, now), executionTrace(current)),
    );
    if (!started.ok) {
      const status = started.current?.status ?? "unknown";
      throw conflict(`execution "${executionId}" is ${status}; only a PENDING execution can be triggered`);
    }
    await this.start(started.record);
    return { executionId, status: started.record.status, created: false };
  }

  /**
   * An upload for an input too large for a request (Lambda carries 6 MB): a presigned request the
   * client makes itself, then `inputRef` on create or trigger.
   */
  async createUpload(bytes: number): Promise<UploadTicket> {
    const { maxBytes } = this.ctx.payloads.settings;
    if (bytes > maxBytes)
      throw new PayloadError(
        "PayloadTooLarge",
        `an input of ${bytes} bytes is over the limit of ${maxBytes} bytes per execution input`,
      );
    const inputRef = `${UPLOAD_PREFIX}${this.ctx.ids.token()}`;
    const upload = await this.ctx.blobs.uploadRequest(inputRef, bytes, UPLOAD_URL_SECONDS);
    if (upload === undefined)
      throw new RequestError("UploadsUnavailable", "this runtime's blob store takes no uploads");
    const expiresAt = new Date(this.ctx.clock.now() + UPLOAD_URL_SECONDS * 1000).toISOString();
    return { inputRef, upload, expiresAt };
  }

  /** An uploaded input, checked like one sent inline, kept under the execution's prefix. */
  /** The request's input as a value: given, or read from its upload (which is checked when it is taken). */
  private async requestInput(request: TracedCreateRequest): Promise<unknown> {
    if (request.inputRef === undefined) return request.input ?? null;
    const text = await this.ctx.blobs.get(request.inputRef);
    return text === undefined ? null : parseExact(text);
  }

  private async uploadedInput(executionId: string, inputRef: string): Promise<Payload> {
    const { maxBytes, maxDepth } = this.ctx.payloads.settings;
    const missing = () =>
      badRequest(`inputRef "${inputRef}" names no upload: it was never made, or it expired`, [
        { path: "inputRef", code: "upload_missing", message: "no upload under this reference" },
      ]);
    const size = await this.ctx.blobs.size(inputRef);
    if (size === undefined) throw missing();
    if (size > maxBytes)
      throw new PayloadError(
        "PayloadTooLarge",
        `the uploaded input is ${size} bytes; the limit is ${maxBytes} bytes per execution input`,
      );
    const text = await this.ctx.blobs.get(inputRef);
    if (text === undefined) throw missing();
    if (jsonTextDepth(text, maxDepth) > maxDepth)
      throw new PayloadError(
        "PayloadTooDeep",
        `the uploaded input nests arrays and objects more than ${maxDepth} levels deep; the limit is ${maxDepth}`,
      );
    let value: unknown;
    try {
      value = parseExact(text);
    } catch (error) {
      throw badRequest("the uploaded input is not valid JSON", [
        {
          path: "inputRef",
          code: "invalid_json",
          message: error instanceof Error ? error.message : "unparseable",
        },
      ]);
    }
    return this.ctx.payloads.save(executionId, value, "the uploaded input");
  }

  async describe(executionId: string, viewOptions: ViewOptions): Promise<ExecutionView> {
    const execution = await this.ctx.store.getExecution(executionId);
    if (!execution) throw notFound(`execution "${executionId}" does not exist`);
    const [graph, records] = await Promise.all([
      this.ctx.graphs.get(execution.workflow, execution.version),
      this.ctx.store.listNodes(executionId),
    ]);
    const renderer = new PayloadRenderer(this.ctx, viewOptions);
    const byId = new Map(records.map((r) => [r.nodeId, r]));
    const input = await renderer.render(execution.input);
    const nodes: NodeView[] = [];
    const progress = await mapProgress(this.ctx, executionId, records);
    for (const node of graph.nodes) {
      const view = nodeView(node.id, node.type, byId.get(node.id), execution);
      const items = progress.get(`${node.id}[${byId.get(node.id)?.attempt}]`);
      if (items) view.items = items;
      const record = byId.get(node.id);
      const child = record?.composite;
      const childId = childExecutionOf(child);
      if (childId !== undefined) view.childExecutionId = childId;
      if (child?.kind === "loop") view.iteration = child.iteration;
      if (child?.kind === "callback" && record?.status === "RUNNING" && record.lease)
        view.callbackToken = callbackToken(executionId, node.id, record.attempt, record.lease);
      if (record?.status === "RUNNING" && record.lease?.workerId) view.workerId = record.lease.workerId;
      const output = byId.get(node.id)?.output;
      if (view.status === "COMPLETED")
        Object.assign(view, rendered("output", await renderer.render(output ?? NULL_PAYLOAD)));
      nodes.push(view);
    }
    const view: ExecutionView = {
      executionId,
      workflow: execution.workflow,
      version: execution.version,
      status: execution.status,
      ...rendered("input", input),
      createdAt: iso(execution.createdAt),
      nodes,
      ...(execution.startedAt !== undefined ? { startedAt: iso(execution.startedAt) } : {}),
      ...(execution.finishedAt !== undefined ? { finishedAt: iso(execution.finishedAt) } : {}),
      ...(execution.error ? { error: execution.error } : {}),
      ...(execution.parent
        ? { parent: { executionId: execution.parent.executionId, nodeId: execution.parent.nodeId } }
        : {}),
    };
    // Read only for a workflow that writes variables: the others' views cost no extra read.
    const variables = graph.nodes.some((node) => node.assign !== undefined || node.type === VARS_TASK_TYPE)
      ? await readVariablesSized(this.ctx, executionId)
      : undefined;
    if (variables) view.vars = variables.document;
    // The cost model loads with the first description that asks for it (the API's): the other
    // functions' bundles keep it in a chunk they never load.
    if (viewOptions.cost)
      view.cost = (await import("./execution-cost.js")).executionCostOf(
        this.ctx,
        graph,
        execution,
        records,
        variables?.bytes,
      );
    const handler = graph.onFailure && byId.get(graph.onFailure.id);
    if (graph.onFailure && handler) {
      const onFailure = nodeView(graph.onFailure.id, graph.onFailure.type, handler, execution);
      if (handler.status === "COMPLETED")
        Object.assign(onFailure, rendered("output", await renderer.render(handler.output ?? NULL_PAYLOAD)));
      view.onFailure = onFailure;
    }
    if (execution.status === "SUCCEEDED")
      Object.assign(view, rendered("output", await renderer.render(sinkOutputs(graph, byId))));
    return view;
  }

  /** A succeeded execution's output as a payload (a child's, for its parent's `workflow` node). */
  async outputOf(execution: ExecutionRecord): Promise<Payload> {
    const [graph, records] = await Promise.all([
      this.ctx.graphs.get(execution.workflow, execution.version),
      this.ctx.store.listNodes(execution.executionId),
    ]);
    return sinkOutputs(graph, new Map(records.map((r) => [r.nodeId, r])));
  }

  /** Publishes the start and dispatches the entry nodes. */
  private async start(execution: ExecutionRecord): Promise<void> {
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    await this.ctx.events.publish([executionLifecycleEvent(execution)]);
    await armDeadline(this.ctx, execution);
    await this.propagation.startEntries(execution, graph);
  }
}

/** Whether every entry of `graph` is dispatched by its message alone (dispatch-mode.ts: direct). */
function entriesByMessage(ctx: EngineContext, graph: WorkflowGraph): boolean {
  return graph.entries.every((index) => dispatchMode(ctx, graph.nodes[index]!) === "direct");
}

/** `{name: value}`, or `{nameRef: reference}` for a value left out of the response. */
function rendered<N extends "input" | "output">(name: N, payload: RenderedPayload): Record<string, unknown> {
  return "value" in payload ? { [name]: payload.value } : { [`${name}Ref`]: payload.ref };
}

function deadlineOf(timeoutSeconds: number | undefined, now: number): { deadline?: number } {
  return timeoutSeconds === undefined ? {} : { deadline: now + timeoutSeconds * 1000 };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The progress of each running map (its current attempt's items, keyed `<map id>[<attempt>]`): a
 * status-only listing of its items, read only while it runs.
 */
async function mapProgress(ctx: EngineContext, executionId: string, records: readonly NodeRecord[]) {
  const progress = new Map<string, MapProgress>();
  await Promise.all(
    records.map(async (record) => {
      if (record.status !== "RUNNING" || record.composite?.kind !== "map") return;
      const counts: MapProgress = { total: record.composite.items, completed: 0, failed: 0, running: 0 };
      const items = await ctx.store.listMapItems(executionId, record.nodeId, record.attempt, {
        statusOnly: true,
      });
      for (const item of items) {
        if (item.status === "COMPLETED") counts.completed++;
        else if (item.status === "FAILED" || item.status === "CANCELLED") counts.failed++;
        else if (item.status === "RUNNING" || item.status === "QUEUED") counts.running++;
      }
      progress.set(`${record.nodeId}[${record.attempt}]`, counts);
    }),
  );
  return progress;
}

/** Nodes with no record never became ready: PENDING while the execution runs, CANCELLED once it ended. */
function nodeView(
  id: string,
  type: string,
  record: NodeRecord | undefined,
  execution: ExecutionRecord,
): NodeView {
  const ended = isTerminalExecution(execution.status);
  const status: NodeStatus = record?.status ?? (ended ? "CANCELLED" : "PENDING");
  const view: NodeView = {
    id,
    type,
    status: ended && status === "PENDING" ? "CANCELLED" : status,
    attempt: 0,
  };
  if (!record) return view;
  view.attempt = record.attempt;
  if (record.startedAt !== undefined) view.startedAt = iso(record.startedAt);
  if (record.finishedAt !== undefined) view.finishedAt = iso(record.finishedAt);
  if (record.error) view.error = record.error;
  if (record.status === "RUNNING" && record.cancelRequested) view.stopping = true;
  // Queued behind a concurrency limit (engine/slots.ts): why, and for which key.
  if (record.status === "QUEUED" && record.waitingFor)
    view.waitingFor = { reason: record.waitingFor.reason, key: record.waitingFor.key };
  return view;
}

/**
 * A succeeded execution's output, `{ [sinkNodeId]: output }`, as a payload made of the sinks' own:
 * completed sinks with their output, sinks failed under `onError: "continue"` with their error;
 * skipped sinks are left out.
 */
function sinkOutputs(graph: WorkflowGraph, byId: Map<string, NodeRecord>): Payload {
  return composePayload(
    graph.sinks.flatMap((index) => {
      const node = graph.nodes[index]!;
      const record = byId.get(node.id);
      if (record?.status === "SKIPPED") return [];
      if (record?.status === "FAILED" && node.onError === "continue")
        return [[node.id, continuedFailure(record.error)] as const];
      return [[node.id, record?.output ?? NULL_PAYLOAD] as const];
    }),
  );
}
