/** Creating, triggering and describing executions. The API only records and dispatches; it never waits. */
import { LIMITS } from "../domain/definition.js";
import type { WorkflowGraph } from "../domain/graph.js";
import type { ExecutionRecord, NodeRecord, NodeStatus } from "../domain/records.js";
import { isTerminalExecution } from "../domain/states.js";
import type { EngineContext } from "./context.js";
import { conflict, notFound, tooLarge } from "./errors.js";
import { executionEvent, executionLifecycleEvent, HISTORY } from "./lifecycle.js";
import type { Propagation } from "./propagation.js";
import type { CreateExecutionRequest, ExecutionSummary, ExecutionView, NodeView } from "./views.js";
import { getWorkflow } from "./workflows.js";

export class Executions {
  constructor(
    private readonly ctx: EngineContext,
    private readonly propagation: Propagation,
  ) {}

  async create(request: CreateExecutionRequest): Promise<ExecutionSummary> {
    const workflow = await getWorkflow(this.ctx, request.workflow, request.version);
    const input = request.input ?? null;
    assertInputSize(input);
    const now = this.ctx.clock.now();
    const start = request.start ?? true;
    const record: ExecutionRecord = {
      executionId: this.ctx.ids.executionId(),
      workflow: workflow.name,
      version: workflow.version,
      status: start ? "RUNNING" : "PENDING",
      input,
      createdAt: now,
      sinksDone: [],
      ...(start
        ? {
            startedAt: now,
            sweepAt: now + this.ctx.sweep.firstCheckMs,
            ...deadlineOf(workflow.definition.timeoutSeconds, now),
          }
        : {}),
      ...(request.idempotencyKey !== undefined ? { idempotencyKey: request.idempotencyKey } : {}),
    };
    const created = await this.ctx.store.createExecution(
      record,
      executionEvent(start ? HISTORY.executionStarted : HISTORY.executionCreated, now),
    );
    if (!created.created) {
      return { executionId: created.existing.executionId, status: created.existing.status, created: false };
    }
    if (start) await this.start(record);
    return { executionId: record.executionId, status: record.status, created: true };
  }

  async trigger(executionId: string, input?: unknown): Promise<ExecutionSummary> {
    if (input !== undefined) assertInputSize(input);
    const current = await this.ctx.store.getExecution(executionId);
    if (!current) throw notFound(`execution "${executionId}" does not exist`);
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
      executionEvent(HISTORY.executionStarted, now),
    );
    if (!started.ok) {
      const status = started.current?.status ?? "unknown";
      throw conflict(`execution "${executionId}" is ${status}; only a PENDING execution can be triggered`);
    }
    await this.start(started.record);
    return { executionId, status: started.record.status, created: false };
  }

  async describe(executionId: string): Promise<ExecutionView> {
    const execution = await this.ctx.store.getExecution(executionId);
    if (!execution) throw notFound(`execution "${executionId}" does not exist`);
    const [graph, records] = await Promise.all([
      this.ctx.graphs.get(execution.workflow, execution.version),
      this.ctx.store.listNodes(executionId),
    ]);
    const byId = new Map(records.map((r) => [r.nodeId, r]));
    const nodes = graph.nodes.map((node) => nodeView(node.id, node.type, byId.get(node.id), execution));
    const view: ExecutionView = {
      executionId,
      workflow: execution.workflow,
      version: execution.version,
      status: execution.status,
      input: execution.input,
      createdAt: iso(execution.createdAt),
      nodes,
      ...(execution.startedAt !== undefined ? { startedAt: iso(execution.startedAt) } : {}),
      ...(execution.finishedAt !== undefined ? { finishedAt: iso(execution.finishedAt) } : {}),
      ...(execution.error ? { error: execution.error } : {}),
    };
    if (execution.status === "SUCCEEDED") view.output = sinkOutputs(graph, byId);
    return view;
  }

  /** Publishes the start and dispatches the entry nodes. */
  private async start(execution: ExecutionRecord): Promise<void> {
    const graph = await this.ctx.graphs.get(execution.workflow, execution.version);
    await this.ctx.events.publish([executionLifecycleEvent(execution)]);
    await this.propagation.startEntries(execution, graph);
  }
}

function assertInputSize(input: unknown): void {
  const bytes = Buffer.byteLength(JSON.stringify(input) ?? "null", "utf8");
  if (bytes > LIMITS.maxInputBytes) {
    throw tooLarge(`execution input is ${bytes} bytes; the limit is ${LIMITS.maxInputBytes}`);
  }
}

function deadlineOf(timeoutSeconds: number | undefined, now: number): { deadline?: number } {
  return timeoutSeconds === undefined ? {} : { deadline: now + timeoutSeconds * 1000 };
}

const iso = (ms: number) => new Date(ms).toISOString();

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
  if (record.status === "COMPLETED") view.output = record.output ?? null;
  if (record.error) view.error = record.error;
  return view;
}

function sinkOutputs(graph: WorkflowGraph, byId: Map<string, NodeRecord>): Record<string, unknown> {
  const output: Record<string, unknown> = {};
  for (const index of graph.sinks) {
    const id = graph.nodes[index]!.id;
    output[id] = byId.get(id)?.output ?? null;
  }
  return output;
}
