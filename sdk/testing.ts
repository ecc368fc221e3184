/**
 * `weft-orchestrator/testing`: run a workflow to its end inside a unit test (vitest, jest, node:test)
 * — the real engine on in-memory adapters, timers on a virtual clock — and assert on what it did.
 *
 *   import { createTestRuntime } from "weft-orchestrator/testing";
 *   import { greet } from "../tasks/greet.js";
 *
 *   const weft = await createTestRuntime({ tasks: [greet] });   // or { tasksDir: "tasks" }, or {}
 *   const run = await weft.run(hello, { name: "Ada" });          // registers, starts, runs to the end
 *   expect(run.status).toBe("SUCCEEDED");
 *   expect(run.output).toEqual({ greet: { message: "Hello, Ada!" } });
 *   await weft.close();
 *
 * What is virtual: the engine's clock. Retries' backoff, `wait` and `sleep` nodes, callback
 * timeouts, attempt timeouts and the sweeper's schedule take no real time; `weft.clock.now()` says
 * where virtual time is, and `context.now()` / `$now()` read it. What is real: your task handlers'
 * code and whatever they await (a fetch, their own timers) — virtual time never moves while a
 * handler is doing real work, only while it waits in `context.sleep`.
 *
 * Not supported: nodes on external workers (`runsOn`: registering such a workflow throws), the HTTP
 * API itself, and uploads of inputs (`inputRef`). Callbacks are settled through `weft.callbacks`.
 * docs/testing-your-workflows.md has the whole story.
 */

export type { LambdaTaskEvent } from "../shared/tasks/lambda.js";
export type { WorkflowDefinition } from "../testkit/definition.js";
export { ExecutionWaitingError, InvalidWorkflowError } from "../testkit/errors.js";
export type { LambdaHandler } from "../testkit/lambda.js";
export type { TestRuntimeOptions } from "../testkit/options.js";
export type {
  ErrorInfo,
  ExecutionStatus,
  MapProgress,
  NodeStatus,
  TestHistoryEvent,
  TestNode,
  TestRun,
} from "../testkit/run.js";
export {
  type CallbackError,
  createTestRuntime,
  type RegisteredWorkflow,
  type StartOptions,
  type TestCallbacks,
  type TestClock,
  type TestRuntime,
} from "../testkit/runtime.js";
export type { WaitingNode } from "../testkit/waiting.js";
