/**
 * What a test asserts on: an execution as `GET /executions/{id}` shows it, every value inlined as
 * plain JSON, its nodes keyed by id, and its history as `GET /executions/{id}/events` lists it.
 */
import type { ErrorInfo, ExecutionStatus, NodeStatus } from "../shared/domain/records.js";
import type { Engine } from "../shared/engine/engine.js";
import type { HistoryPage } from "../shared/engine/queries.js";
import type { MapProgress, NodeView } from "../shared/engine/views.js";

export type { ErrorInfo, ExecutionStatus, MapProgress, NodeStatus };

/** One node of an execution. */
export interface TestNode {
  id: string;
  type: string;
  status: NodeStatus;
  /** Its current attempt (0 when it never started). */
  attempt: number;
  /** A completed node's output. */
  output?: unknown;
  error?: ErrorInfo;
  /** ISO times of its current attempt. */
  startedAt?: string;
  finishedAt?: string;
  /** A `callback` node waiting for its settlement: the token that settles it (`weft.callbacks`). */
  callbackToken?: string;
  /** A `workflow` node: its child execution. */
  childExecutionId?: string;
  /** A `map` node: its items' progress. */
  items?: MapProgress;
}

/** A history event, as the API lists them: in causal order, `at` an ISO time (virtual). */
export type TestHistoryEvent = HistoryPage["events"][number];

/** An execution as it is now: after `weft.run` / `weft.runToEnd`, as it ended. */
export interface TestRun {
  executionId: string;
  workflow: string;
  version: number;
  status: ExecutionStatus;
  input: unknown;
  /** A succeeded execution's output: each sink node's output by its id. */
  output: Record<string, unknown> | undefined;
  /** A failed (or cancelled) execution's error. */
  error: ErrorInfo | undefined;
  /** Every node of the workflow by id, in definition order; one that never started is PENDING. */
  nodes: Record<string, TestNode>;
  /** The workflow's `onFailure` handler, once a failure started it. */
  onFailure: TestNode | undefined;
  history: TestHistoryEvent[];
}

const HISTORY_PAGE = 1000;

export async function readRun(engine: Engine, executionId: string): Promise<TestRun> {
  // Inlined whatever the size: a test runtime has no response limit to respect.
  const view = await engine.describeExecution(executionId, {
    resolve: true,
    maxBytes: Number.POSITIVE_INFINITY,
  });
  const history: TestHistoryEvent[] = [];
  let after: string | undefined;
  do {
    const page = await engine.listEvents(executionId, {
      limit: HISTORY_PAGE,
      ...(after === undefined ? {} : { after }),
    });
    history.push(...page.events);
    after = page.next;
  } while (after !== undefined);
  return {
    executionId: view.executionId,
    workflow: view.workflow,
    version: view.version,
    status: view.status,
    input: view.input,
    output: view.output,
    error: view.error,
    nodes: Object.fromEntries(view.nodes.map((node) => [node.id, testNode(node)])),
    onFailure: view.onFailure === undefined ? undefined : testNode(view.onFailure),
    history,
  };
}

function testNode(view: NodeView): TestNode {
  const { outputRef: _outputRef, workerId: _workerId, ...node } = view;
  return node;
}
