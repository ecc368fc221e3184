/**
 * The `loop` type end to end through the local runtime, on the embedded backend and on DynamoDB +
 * SQS (emulator): a poll loop whose interval comes from the input, `$previous` and `$iteration`
 * in each iteration's input, the iteration limit, a failed iteration, cancellation reaching the
 * running iteration, and registration refusing bad loops.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, nodeOf, startRuntime } from "../support/runtime.js";

describe.each(BACKEND_KINDS)("loops end to end (%s)", PATIENT, (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    runtime = await startRuntime(kind, { concurrency: 4 });
    api = apiClient(runtime.url);
    // One poll of a job: done from its third poll on (the poll counts come in the input).
    await api.register({
      name: `poll-${kind}`,
      nodes: [
        {
          id: "status",
          type: "pass",
          params: { value: { polls: "{% input.polls %}", done: "{% input.polls >= 3 %}" } },
        },
      ],
    });
  });
  afterAll(async () => {
    await runtime?.stop();
  });

  const node = nodeOf;

  it("polls until done, pausing the input's interval between iterations; $previous feeds the next", async () => {
    await api.register({
      name: `poller-${kind}`,
      nodes: [
        {
          id: "poll",
          type: "loop",
          params: {
            workflow: {
              name: `poll-${kind}`,
              // The first iteration has no $previous: its count starts at 1.
              input: { polls: "{% $exists($previous) ? $previous.status.polls + 1 : 1 %}" },
            },
            while: "{% $not($previous.status.done) %}",
            maxIterations: 10,
            intervalSeconds: "{% input.pollSeconds %}",
          },
        },
        { id: "report", type: "pass", dependsOn: ["poll"], params: { value: "{% deps.poll %}" } },
      ],
    });
    const id = await api.start(`poller-${kind}`, { pollSeconds: 1 });
    const view = await api.waitForEnd(id);
    expect(view.status).toBe("SUCCEEDED");
    const poll = node(view, "poll");
    expect(poll).toMatchObject({
      status: "COMPLETED",
      iteration: 3,
      output: { output: { status: { polls: 3, done: true } }, iterations: 3 },
    });
    expect(node(view, "report").output).toEqual({
      output: { status: { polls: 3, done: true } },
      iterations: 3,
    });
    // Two pauses of a second each between three iterations.
    expect(Date.parse(poll.finishedAt) - Date.parse(poll.startedAt)).toBeGreaterThanOrEqual(2000);
    // The last iteration is a child execution linked to the loop's node.
    const last = (await api.call("GET", `/executions/${poll.childExecutionId}`)).body;
    expect(last).toMatchObject({ status: "SUCCEEDED", parent: { executionId: id, nodeId: "poll" } });
    expect(last.input).toEqual({ polls: 3 });
  });

  it("fails with LoopLimitExceeded when while still holds after maxIterations", async () => {
    await api.register({
      name: `endless-${kind}`,
      nodes: [
        {
          id: "spin",
          type: "loop",
          params: {
            workflow: { name: `poll-${kind}`, input: { polls: "{% $iteration - 10 %}" } },
            while: "{% $previous.status.done = false %}",
            maxIterations: 3,
          },
        },
      ],
    });
    const view = await api.waitForEnd(await api.start(`endless-${kind}`));
    expect(view.status).toBe("FAILED");
    expect(node(view, "spin")).toMatchObject({ status: "FAILED", iteration: 3 });
    expect(node(view, "spin").error.name).toBe("LoopLimitExceeded");
  });

  it("a failed iteration fails the loop (retried by its policy as a new loop)", async () => {
    await api.register({
      name: `flaky-step-${kind}`,
      nodes: [
        {
          id: "step",
          type: "fail",
          params: { message: "{% 'broke at ' & $string(input.n) %}", retryable: false },
          when: "{% input.n = 2 %}",
        },
      ],
    });
    await api.register({
      name: `breaks-${kind}`,
      nodes: [
        {
          id: "steps",
          type: "loop",
          params: {
            workflow: { name: `flaky-step-${kind}`, input: { n: "{% $iteration %}" } },
            while: true,
            maxIterations: 5,
          },
          retry: { maxAttempts: 2, backoff: { initialSeconds: 0, jitter: "none" } },
        },
      ],
    });
    const view = await api.waitForEnd(await api.start(`breaks-${kind}`));
    expect(view.status).toBe("FAILED");
    expect(node(view, "steps")).toMatchObject({ status: "FAILED", attempt: 2, iteration: 2 });
    expect(node(view, "steps").error.name).toBe("ChildWorkflowFailed");
  });

  it("cancelling the execution cancels the running iteration", async () => {
    await api.register({
      name: `slow-step-${kind}`,
      nodes: [{ id: "nap", type: "sleep", params: { ms: 120_000 } }],
    });
    await api.register({
      name: `slow-loop-${kind}`,
      nodes: [
        {
          id: "naps",
          type: "loop",
          params: { workflow: { name: `slow-step-${kind}` }, while: true, maxIterations: 100 },
        },
      ],
    });
    const id = await api.start(`slow-loop-${kind}`);
    const childId = await waitForProgress("the first iteration to start", async () => {
      const view = (await api.call("GET", `/executions/${id}`)).body;
      const child = node(view, "naps")?.childExecutionId;
      return child
        ? { done: true, value: child as string }
        : { done: false, progress: node(view, "naps")?.status };
    });
    expect((await api.call("POST", `/executions/${id}/cancel`, {})).status).toBe(202);
    expect((await api.waitForEnd(id)).status).toBe("CANCELLED");
    expect((await api.waitForEnd(childId)).status).toBe("CANCELLED");
  });

  it("refuses a loop with bad params at registration, naming the field", async () => {
    const refused = await api.call("POST", "/workflows", {
      name: `bad-loop-${kind}`,
      nodes: [
        {
          id: "spin",
          type: "loop",
          params: { workflow: { name: `poll-${kind}` }, while: "done", maxIterations: 1_000_000 },
        },
      ],
    });
    expect(refused.status).toBe(400);
    const paths = refused.body.error.details.map((d: { path: string }) => d.path);
    expect(paths).toEqual(expect.arrayContaining(["nodes[0].params.while", "nodes[0].params.maxIterations"]));
  });
});
