/** The engine facade: what the functions (api, worker, sweeper, dlq) call. */
import type { ExecutionStatus, WorkflowVersionRecord } from "../domain/records.js";
import type { EnginePorts, TaskMessage } from "../ports.js";
import type { TaskRegistry } from "../tasks/task-type.js";
import { type EngineContext, type EngineLogger, GraphCache, silentLogger } from "./context.js";
import { cancelExecution } from "./cancellation.js";
import { Executions } from "./executions.js";
import { Propagation } from "./propagation.js";
import { type ExecutionListItem, type HistoryPage, listExecutions, listHistory } from "./queries.js";
import type { CreateExecutionRequest, ExecutionSummary, ExecutionView, RegisterResult } from "./views.js";
import { TaskRunner } from "./worker.js";
import { getWorkflow, registerWorkflow } from "./workflows.js";

export interface EngineOptions {
  /** How long a claimed node's lease lasts before another worker may take over (default 60 s). */
  leaseSeconds?: number;
  logger?: EngineLogger;
}

export class Engine {
  private readonly ctx: EngineContext;
  private readonly propagation: Propagation;
  private readonly executions: Executions;
  private readonly runner: TaskRunner;

  constructor(
    readonly ports: EnginePorts,
    readonly tasks: TaskRegistry,
    readonly options: EngineOptions = {},
  ) {
    this.ctx = {
      ...ports,
      tasks,
      graphs: new GraphCache(ports),
      leaseMs: (options.leaseSeconds ?? 60) * 1000,
      logger: options.logger ?? silentLogger,
    };
    this.propagation = new Propagation(this.ctx);
    this.executions = new Executions(this.ctx, this.propagation);
    this.runner = new TaskRunner(this.ctx, this.propagation);
  }

  /** Validates and stores a definition. Same content → same version; new content → next version. */
  registerWorkflow(raw: unknown): Promise<RegisterResult> {
    return registerWorkflow(this.ctx, raw);
  }

  /** Throws WeftError 404 when unknown. */
  getWorkflow(name: string, version?: number): Promise<WorkflowVersionRecord> {
    return getWorkflow(this.ctx, name, version);
  }

  /** Creates an execution, RUNNING with its entry nodes dispatched, or PENDING when `start` is false. */
  createExecution(request: CreateExecutionRequest): Promise<ExecutionSummary> {
    return this.executions.create(request);
  }

  /** PENDING → RUNNING and dispatch of the entry nodes; WeftError 409 when not PENDING. */
  triggerExecution(executionId: string, input?: unknown): Promise<ExecutionSummary> {
    return this.executions.trigger(executionId, input);
  }

  describeExecution(executionId: string): Promise<ExecutionView> {
    return this.executions.describe(executionId);
  }

  /** Ends a PENDING or RUNNING execution as CANCELLED; running nodes stop at their next heartbeat. */
  cancelExecution(executionId: string, reason?: string): Promise<ExecutionSummary> {
    return cancelExecution(this.ctx, this.propagation, executionId, reason);
  }

  /** The execution's history in time order, `limit` events a page. */
  listEvents(executionId: string, page: { after?: string; limit: number }): Promise<HistoryPage> {
    return listHistory(this.ctx, executionId, page);
  }

  /** Executions newest first, optionally of one workflow and/or in one status. */
  listExecutions(query: {
    workflow?: string;
    status?: ExecutionStatus;
    limit: number;
    next?: string;
  }): Promise<{ executions: ExecutionListItem[]; next?: string }> {
    return listExecutions(this.ctx, query);
  }

  /**
   * Processes one task message (a worker invocation for one SQS record). Resolves when the message
   * may be deleted; rejects when it must come back (the worker reports it as a batch item failure).
   */
  async handleTask(
    message: TaskMessage,
    _delivery: { receiveCount: number } = { receiveCount: 1 },
  ): Promise<void> {
    await this.runner.handle(message);
  }
}
