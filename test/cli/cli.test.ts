/**
 * The real `weft` binary (`node bin/weft.js`, a child process) against a local runtime started here.
 * Each spawn costs about a second of tsx start-up, so the cases are few and each checks much.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import { type ApiClient, apiClient } from "../support/runtime.js";
import { examplesDir, startExampleRuntime, weft } from "./support.js";

/** A plain watch line: `12:00:01 extract-a RUNNING attempt 1`, maybe a duration and an error after it. */
const PLAIN_NODE_LINE =
  /^\d\d:\d\d:\d\d [A-Za-z0-9][\w-]* (PENDING|QUEUED|RUNNING|COMPLETED|FAILED|CANCELLED) attempt \d+/;

let runtime: LocalRuntime;
let api: ApiClient;
let etlExecution: ExecutionView;

beforeAll(async () => {
  runtime = await startExampleRuntime();
  api = apiClient(runtime.url);
});
afterAll(() => runtime?.stop());

describe("weft run", () => {
  it("runs the ETL example to success: exit 0 and the execution as JSON on stdout", async () => {
    const result = await weft([
      "run",
      "examples/etl/workflow.json",
      "--input",
      "@examples/etl/input.json",
      "--api",
      runtime.url,
      "--json",
      "--interval",
      "100",
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    etlExecution = JSON.parse(result.stdout) as ExecutionView;
    expect(etlExecution).toMatchObject({
      workflow: "nightly-etl",
      status: "SUCCEEDED",
      input: { day: "2026-11-22" },
      output: { load: { table: "analytics.daily_orders", loaded: true } },
    });
    expect(etlExecution.nodes.map((n) => n.status)).toEqual(Array(6).fill("COMPLETED"));
  });

  it("runs the declined order to failure: exit 1, plain watch lines, the error at the end", async () => {
    const result = await weft([
      "run",
      "examples/order-declined/workflow.json",
      "--input",
      "@examples/order-declined/input.json",
      "--api",
      runtime.url,
      "--interval",
      "100",
    ]);
    expect(result.code).toBe(1);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(`registered workflow "order-process-declined" version 1`);
    expect(lines[1]).toMatch(/^watching execution [0-9a-f-]{36} \(order-process-declined v1, 5 nodes\)$/);
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^\d\d:\d\d:\d\d charge-payment FAILED attempt 1 in \d+ms — TerminalError: card declined \(insufficient funds\)$/,
      ),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^\d\d:\d\d:\d\d \[execution\] FAILED in /));
    expect(lines.at(-1)).toBe(
      `error: TerminalError: node "charge-payment" failed: card declined (insufficient funds)`,
    );
    // No color codes off a TTY.
    expect(result.stdout).not.toContain("\x1b[");
  });
});

describe("weft watch", () => {
  it("prints one plain line per node change off a TTY and exits 0 when the execution succeeds", async () => {
    const definition = JSON.parse(await readFile(path.join(examplesDir, "order/workflow.json"), "utf8"));
    expect((await api.call("POST", "/workflows", definition)).status).toBe(201);
    // Created PENDING and started only once the watch polls: the retries' backoffs (0.5 s, 1 s) are
    // shorter than the CLI's start-up on a busy machine, and the watch must be there to see them.
    const created = await api.call("POST", "/executions", {
      workflow: "order-process",
      input: { orderId: "o-1" },
      start: false,
    });
    expect(created.status).toBe(202);
    const id = created.body.executionId as string;

    let triggered: ReturnType<ApiClient["call"]> | undefined;
    const result = await weft(["watch", id, "--api", runtime.url, "--interval", "50"], {
      onStdout: (stdout) => {
        if (triggered === undefined && stdout.includes(`watching execution ${id}`)) {
          triggered = api.call("POST", `/executions/${id}/trigger`);
        }
      },
    });
    expect((await triggered)?.status).toBe(202);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(`watching execution ${id} (order-process v1, 5 nodes)`);
    const outputAt = lines.indexOf("output:");
    const progress = lines.slice(1, outputAt);
    for (const line of progress) {
      expect(line).toMatch(/^(\d\d:\d\d:\d\d \[execution\] [A-Z]+|.*attempt \d+)/);
      if (!line.includes("[execution]")) expect(line).toMatch(PLAIN_NODE_LINE);
    }
    // The flaky payment: retried after each failure, completed on attempt 3.
    expect(progress).toContainEqual(
      expect.stringMatching(
        / charge-payment QUEUED attempt [23] — RetryableError: payment gateway timed out$/,
      ),
    );
    expect(progress).toContainEqual(expect.stringMatching(/ charge-payment COMPLETED attempt 3 in \d+ms$/));
    expect(progress.at(-1)).toMatch(/ \[execution\] SUCCEEDED in /);
    expect(JSON.parse(lines.slice(outputAt + 1).join("\n"))).toEqual({
      "send-confirmation": { email: "sent" },
    });
  });

  it("cancel ends a running execution, and watch then exits 3", async () => {
    const slow = { name: "cli-slow", nodes: [{ id: "wait", type: "wait", params: { seconds: 600 } }] };
    await api.call("POST", "/workflows", slow);
    const id = (await api.call("POST", "/executions", { workflow: "cli-slow" })).body.executionId as string;

    const cancelled = await weft(["cancel", id, "--reason", "not needed", "--api", runtime.url, "--json"]);
    expect(cancelled.code).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toEqual({ executionId: id, status: "CANCELLED" });

    const watched = await weft(["watch", id, "--api", runtime.url, "--json"]);
    expect(watched.code).toBe(3);
    expect(JSON.parse(watched.stdout)).toMatchObject({ executionId: id, status: "CANCELLED" });
  });
});

describe("weft validate", () => {
  it("lists every problem with its path and code and exits 1", async () => {
    const result = await weft([
      "validate",
      "test/cli/fixtures/broken.json",
      "--custom-tasks",
      "test/cli/fixtures/tasks",
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^test\/cli\/fixtures\/broken\.json: \d+ problem\(s\)\n/);
    for (const [pathText, code] of [
      ["nodes[0].dependsOn[0]", "self_dependency"],
      ["nodes[1].type", "unknown_task_type"],
      ["nodes[2].id", "duplicate_id"],
      ["nodes[2].dependsOn[0]", "unknown_dependency"],
      ["nodes[3].fanIn", "fan_in_out_of_range"],
      ["nodes[4].params.ms", "invalid_params"],
      // The custom task type from --custom-tasks: known, and its params checked against its schema.
      ["nodes[5].params.who", "invalid_params"],
    ]) {
      expect(result.stdout).toMatch(new RegExp(`^  ${escapeRegExp(pathText as string)} +${code} `, "m"));
    }
    expect(result.stdout).not.toContain('unknown task type "greet"');
  });
});

describe("reading an execution", () => {
  it("status renders the node table with dependencies and the output", async () => {
    const result = await weft(["status", etlExecution.executionId, "--api", runtime.url]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      new RegExp(`^execution ${etlExecution.executionId}  nightly-etl v1  SUCCEEDED  `),
    );
    expect(result.stdout).toMatch(
      /^ {2}✔ join +COMPLETED attempt 1 .*⇐ extract-orders, extract-customers, extract-fx-rates$/m,
    );
    expect(result.stdout).toContain('"table": "analytics.daily_orders"');
  });

  it("events --json gives the history in order", async () => {
    const result = await weft([
      "events",
      etlExecution.executionId,
      "--api",
      runtime.url,
      "--json",
      "--limit",
      "4",
    ]);
    expect(result.code).toBe(0);
    const { events } = JSON.parse(result.stdout) as { events: Array<{ type: string; nodeId?: string }> };
    // Read across several pages of 4.
    expect(events.length).toBeGreaterThan(8);
    expect(events[0]?.type).toBe("ExecutionStarted");
    expect(events.filter((e) => e.type === "NodeCompleted").map((e) => e.nodeId)).toHaveLength(6);
    expect(events.map((e) => e.type)).toContain("ExecutionSucceeded");
  });

  it("list --json filters by workflow and status", async () => {
    const result = await weft([
      "list",
      "--workflow",
      "nightly-etl",
      "--status",
      "succeeded",
      "--api",
      runtime.url,
      "--json",
    ]);
    expect(result.code).toBe(0);
    const page = JSON.parse(result.stdout) as { executions: Array<{ executionId: string; status: string }> };
    expect(page.executions).toEqual([
      expect.objectContaining({
        executionId: etlExecution.executionId,
        workflow: "nightly-etl",
        status: "SUCCEEDED",
      }),
    ]);
  });

  it("dlq list shows the declined payment's dead-lettered work", async () => {
    const result = await weft(["dlq", "list", "--api", runtime.url, "--json"]);
    expect(result.code).toBe(0);
    const { deadLetters } = JSON.parse(result.stdout) as { deadLetters: Array<Record<string, unknown>> };
    expect(deadLetters).toContainEqual(
      expect.objectContaining({
        nodeId: "charge-payment",
        attempt: 1,
        error: expect.objectContaining({ message: "card declined (insufficient funds)" }),
      }),
    );
  });
});

describe("errors", () => {
  it("an unreachable API: exit 1 and a message naming the URL", async () => {
    const closed = await runtimeUrlThatIsClosed();
    const result = await weft(["status", "some-id", "--api", closed]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      `weft: cannot reach the weft API at ${closed} — is \`weft dev\` (or \`npm start\` in weft's repository) running?`,
    );
  });

  it("bad JSON in --input is a usage error (exit 2) naming the position", async () => {
    const result = await weft(["start", "nightly-etl", "--input", '{"day":}', "--api", runtime.url]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--input: invalid JSON at line 1, column 8");
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A loopback URL nothing listens on: a runtime's port after it stopped. */
async function runtimeUrlThatIsClosed(): Promise<string> {
  const { createServer } = await import("node:net");
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
