/**
 * Every example in examples/ runs to its expected final status through the local runtime: each folder's
 * workflow.json is registered and started with its input.json over the HTTP API, as `weft run` does.
 * A new example folder must be added to EXPECTED, so none goes untested. A README that quotes an
 * output is checked too: its commands are run and their output compared with the quote.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExampleServer, startServer } from "../../examples/http-and-lambda/server.js";
import { type LocalRuntime, startLocalRuntime } from "../../local/runtime.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import { projectTaskOptions } from "../../shared/tasks/project-tasks.js";
import { waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient } from "../support/runtime.js";
import { examplesDir, repoRoot, startExampleRuntime, weft } from "./support.js";

/**
 * `before`: definitions in the folder to register first (a sub-workflow's child); `meanwhile`: what a
 * person or a service does while it runs (an approver settling a callback).
 */
const EXPECTED: Record<
  string,
  {
    status: string;
    before?: string[];
    meanwhile?: (api: ApiClient, executionId: string) => Promise<void>;
    check?: (view: ExecutionView) => void;
  }
> = {
  etl: {
    status: "SUCCEEDED",
    check: (view) => expect(view.output).toEqual({ load: { table: "analytics.daily_orders", loaded: true } }),
  },
  order: {
    status: "SUCCEEDED",
    check: (view) => expect(node(view, "charge-payment")).toMatchObject({ status: "COMPLETED", attempt: 3 }),
  },
  "order-declined": {
    status: "FAILED",
    check: (view) => {
      expect(node(view, "charge-payment")).toMatchObject({ status: "FAILED", attempt: 1 });
      expect(view.error?.message).toContain("card declined");
      expect(node(view, "send-confirmation").status).toBe("CANCELLED");
    },
  },
  "fan-out": {
    status: "SUCCEEDED",
    check: (view) => {
      expect(view.output).toEqual({
        "publish-gallery": { published: true, thumbnails: 8, first: "thumbs/summer-2026/1.jpg" },
      });
      expect(node(view, "resize").status).toBe("COMPLETED");
      expect(node(view, "resize").output).toHaveLength(8);
    },
  },
  "sub-workflow": {
    status: "SUCCEEDED",
    before: ["invoice.json"],
    check: (view) => {
      expect(view.output).toEqual({ confirm: { order: "o-88", total: 340 } });
      expect(node(view, "invoice").childExecutionId).toEqual(expect.any(String));
    },
  },
  choice: {
    status: "SUCCEEDED",
    check: (view) => {
      expect(view.output).toEqual({
        route: { "manual-review": { route: "review", reason: "amount 2400 needs a person" } },
      });
      expect(["SKIPPED", "CANCELLED"]).toContain(node(view, "auto-approve").status);
    },
  },
  compensation: {
    status: "FAILED",
    check: (view) => {
      // `confirm` is skipped by its `when` — or, when the failing branch (run in the same worker
      // invocation as release-room, a continuation) ends the execution before another worker took
      // confirm's message, cancelled by that fail-fast first. Both are its right end; which one is
      // a race between two workers.
      const confirm = view.nodes.find((n) => n.id === "confirm")?.status;
      expect(["SKIPPED", "CANCELLED"]).toContain(confirm);
      expect(view.nodes.filter((n) => n.id !== "confirm").map((n) => [n.id, n.status])).toEqual([
        ["reserve-room", "COMPLETED"],
        ["charge-card", "FAILED"],
        ["release-room", "COMPLETED"],
        ["notify-guest", "FAILED"],
      ]);
      expect(view.error?.message).toContain("mail server unreachable");
    },
  },
  approval: {
    status: "SUCCEEDED",
    meanwhile: async (api, executionId) => {
      // The approver: the token from the execution's view, once the node waits.
      const token = await waitForProgress("manager-approval to wait", async () => {
        const view = (await api.call("GET", `/executions/${executionId}`)).body as ExecutionView;
        const waiting = view.nodes.find((n) => n.id === "manager-approval")?.callbackToken;
        return waiting ? { done: true, value: waiting } : { done: false, progress: view.status };
      });
      const approved = await api.call("POST", "/callbacks/complete", {
        token,
        output: { approved: true, by: "dana" },
      });
      expect(approved.status).toBe(202);
      const again = await api.call("POST", "/callbacks/complete", { token, output: { approved: false } });
      expect(again.status).toBe(409);
    },
    check: (view) => expect(view.output).toEqual({ pay: { paid: 120, approvedBy: "dana" } }),
  },
  saga: {
    status: "SUCCEEDED",
    check: (view) => {
      // input.json fails at the car: the flight, then the hotel are undone, and the failure is caught.
      expect(statuses(view)).toEqual(SAGA_STATES.car);
      expect(view.output).toEqual({
        "rolled-back": {
          trip: "t-1001",
          status: "rolled back",
          failedAt: "book-car",
          error: "no car left",
          undone: ["flight", "hotel"],
        },
      });
    },
  },
  "multi-tenant": {
    status: "SUCCEEDED",
    check: (view) => {
      expect(view.output).toEqual({ report: { tenant: "acme", synced: 42 } });
      expect(node(view, "sync")).toMatchObject({ status: "COMPLETED", attempt: 1 });
      expect(node(view, "sync").waitingFor).toBeUndefined();
    },
  },
  poller: {
    status: "SUCCEEDED",
    before: ["poller-check.json"],
    check: (view) => {
      expect(view.output).toEqual({ report: { job: "nightly-report", state: "DONE", polls: 3 } });
      const poll = node(view, "poll");
      expect(poll).toMatchObject({
        status: "COMPLETED",
        iteration: 3,
        childExecutionId: expect.any(String),
        output: { output: { status: { job: "nightly-report", poll: 3, state: "DONE" } }, iterations: 3 },
      });
      // Two pauses of pollSeconds (1) between three polls.
      expect(
        Date.parse(poll.finishedAt as string) - Date.parse(poll.startedAt as string),
      ).toBeGreaterThanOrEqual(2000);
    },
  },
  "http-and-lambda": {
    status: "SUCCEEDED",
    check: (view) => {
      expect(node(view, "score").output).toMatchObject({
        leadId: "42",
        company: "Acme Logistics",
        tier: "hot",
      });
      expect(view.output).toMatchObject({ "notify-sales": { status: 202, body: { accepted: true } } });
    },
  },
};

/** examples/saga's nodes' end states for each step its input's `failAt` may name (none: booked). */
const SAGA_STATES: Record<string, Record<string, string>> = {
  none: {
    "book-hotel": "COMPLETED",
    "book-flight": "COMPLETED",
    "book-car": "COMPLETED",
    "take-payment": "COMPLETED",
    booked: "COMPLETED",
    "cancel-car": "SKIPPED",
    "cancel-flight": "SKIPPED",
    "cancel-hotel": "SKIPPED",
    "rolled-back": "SKIPPED",
  },
  hotel: {
    "book-hotel": "FAILED",
    "book-flight": "SKIPPED",
    "book-car": "SKIPPED",
    "take-payment": "SKIPPED",
    booked: "SKIPPED",
    "cancel-car": "SKIPPED",
    "cancel-flight": "SKIPPED",
    "cancel-hotel": "SKIPPED",
    "rolled-back": "COMPLETED",
  },
  flight: {
    "book-hotel": "COMPLETED",
    "book-flight": "FAILED",
    "book-car": "SKIPPED",
    "take-payment": "SKIPPED",
    booked: "SKIPPED",
    "cancel-car": "SKIPPED",
    "cancel-flight": "SKIPPED",
    "cancel-hotel": "COMPLETED",
    "rolled-back": "COMPLETED",
  },
  car: {
    "book-hotel": "COMPLETED",
    "book-flight": "COMPLETED",
    "book-car": "FAILED",
    "take-payment": "SKIPPED",
    booked: "SKIPPED",
    "cancel-car": "SKIPPED",
    "cancel-flight": "COMPLETED",
    "cancel-hotel": "COMPLETED",
    "rolled-back": "COMPLETED",
  },
  payment: {
    "book-hotel": "COMPLETED",
    "book-flight": "COMPLETED",
    "book-car": "COMPLETED",
    "take-payment": "FAILED",
    booked: "SKIPPED",
    "cancel-car": "COMPLETED",
    "cancel-flight": "COMPLETED",
    "cancel-hotel": "COMPLETED",
    "rolled-back": "COMPLETED",
  },
};

function statuses(view: ExecutionView): Record<string, string> {
  return Object.fromEntries(view.nodes.map((n) => [n.id, n.status]));
}

function node(view: ExecutionView, id: string) {
  const found = view.nodes.find((n) => n.id === id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
}

let runtime: LocalRuntime;
let api: ApiClient;
let server: ExampleServer;

beforeAll(async () => {
  [runtime, server] = await Promise.all([startExampleRuntime(), startServer(0)]);
  api = apiClient(runtime.url);
});
afterAll(async () => {
  await Promise.all([runtime?.stop(), server?.close()]);
});

describe("examples/", () => {
  it("every example folder has an expected outcome here, a workflow, an input and a README", async () => {
    const folders = (await readdir(examplesDir, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const folder of folders) {
      const files = await readdir(path.join(examplesDir, folder));
      expect(files, folder).toEqual(expect.arrayContaining(["workflow.json", "input.json", "README.md"]));
    }
  });

  it.each(Object.entries(EXPECTED))("%s ends %s", async (folder, expected) => {
    const read = async (file: string) =>
      JSON.parse(await readFile(path.join(examplesDir, folder, file), "utf8"));
    for (const file of expected.before ?? []) {
      const child = await api.call("POST", "/workflows", await read(file));
      expect([200, 201], JSON.stringify(child.body)).toContain(child.status);
    }
    let definition = await read("workflow.json");
    // The example calls its services on :4010; here they listen on a free port.
    definition = JSON.parse(JSON.stringify(definition).replaceAll("http://127.0.0.1:4010", server.url));
    const registered = await api.call("POST", "/workflows", definition);
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const started = await api.call("POST", "/executions", {
      workflow: definition.name,
      version: registered.body.version,
      input: await read("input.json"),
    });
    expect(started.status).toBe(202);
    await expected.meanwhile?.(api, started.body.executionId);
    const view = await api.waitForEnd(started.body.executionId, 15_000);
    expect(view.status, JSON.stringify(view.nodes)).toBe(expected.status);
    expected.check?.(view);
  });
});

describe("examples/saga: each input file", () => {
  // input.json (the car fails) runs above; these are the README's other cases.
  it.each([
    ["input-booked.json", "none", { booked: { trip: "t-1001", status: "booked" } }],
    ["input-hotel.json", "hotel", rolledBack("book-hotel", "no hotel room left", [])],
    ["input-flight.json", "flight", rolledBack("book-flight", "no seat left on the flight", ["hotel"])],
    [
      "input-payment.json",
      "payment",
      rolledBack("take-payment", "card declined", ["car", "flight", "hotel"]),
    ],
  ])("%s runs the compensations of the steps done before the failed one", async (file, failAt, output) => {
    const read = async (name: string) =>
      JSON.parse(await readFile(path.join(examplesDir, "saga", name), "utf8"));
    const definition = await read("workflow.json");
    const registered = await api.call("POST", "/workflows", definition);
    expect([200, 201], JSON.stringify(registered.body)).toContain(registered.status);
    const started = await api.call("POST", "/executions", {
      workflow: definition.name,
      version: registered.body.version,
      input: await read(file),
    });
    expect(started.status).toBe(202);
    const view = await api.waitForEnd(started.body.executionId, 15_000);
    expect(view.status, JSON.stringify(view.nodes)).toBe("SUCCEEDED");
    expect(statuses(view)).toEqual(SAGA_STATES[failAt]);
    expect(view.output).toEqual(output);
  });
});

function rolledBack(failedAt: string, error: string, undone: string[]) {
  return { "rolled-back": { trip: "t-1001", status: "rolled back", failedAt, error, undone } };
}

/** The lines of a README's first ```sh block: comments and a trailing `&` left out. */
function shellCommands(readme: string): string[] {
  const block = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  return block
    .split("\n")
    .map((line) =>
      line
        .replace(/\s#.*$/, "")
        .replace(/&\s*$/, "")
        .trim(),
    )
    .filter((line) => line !== "");
}

describe("examples/http-and-lambda/README.md", () => {
  it("its commands print the score it quotes", { timeout: 120_000 }, async () => {
    const readme = await readFile(path.join(examplesDir, "http-and-lambda/README.md"), "utf8");
    const quoted: unknown = JSON.parse(/```json\n([\s\S]*?)```/.exec(readme)?.[1] ?? "null");
    expect(quoted).toMatchObject({ score: expect.any(Number) });
    const commands = shellCommands(readme);
    const npmStart = commands.find((line) => line.startsWith("npm start -- "));
    const configFile = /--config (\S+)/.exec(npmStart ?? "")?.[1];
    expect(configFile, "the README starts the runtime with --config").toBeDefined();
    const weftCommands = commands
      .filter((line) => line.startsWith("npx weft "))
      .map((line) => line.slice("npx weft ".length).split(/\s+/));
    expect(weftCommands.map(([command]) => command)).toEqual(["run", "status"]);
    const [runArgs = [], statusArgs = []] = weftCommands;

    // The runtime as `npm start -- --config FILE` makes it (the same lookup of its task types).
    const readmeRuntime = await startLocalRuntime({
      backend: "memory",
      port: 0,
      waitSeconds: 0,
      sweep: false,
      onError: () => {},
      env: {},
      taskOptions: await projectTaskOptions({ cwd: repoRoot, configFile: configFile as string, env: {} }),
    });
    // The workflow calls the example's server on :4010; here it listens on a free port.
    const scratch = await mkdtemp(path.join(tmpdir(), "weft-readme-"));
    try {
      const workflowFile = path.join(scratch, "workflow.json");
      const original = await readFile(path.join(examplesDir, "http-and-lambda/workflow.json"), "utf8");
      await writeFile(workflowFile, original.replaceAll("http://127.0.0.1:4010", server.url));
      const api = ["--api", readmeRuntime.url];

      const run = await weft([
        ...runArgs.map((arg) => (arg === "examples/http-and-lambda/workflow.json" ? workflowFile : arg)),
        ...api,
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/\[execution\] SUCCEEDED/);
      const executionId = /watching execution ([0-9a-f-]{36})/.exec(run.stdout)?.[1];
      expect(executionId).toBeDefined();

      const status = await weft([
        ...statusArgs.map((arg) => (arg === "<execution-id>" ? (executionId as string) : arg)),
        ...api,
      ]);
      expect(status.code, status.stderr).toBe(0);
      const view = JSON.parse(status.stdout) as ExecutionView;
      expect(view.nodes.find((n) => n.id === "score")?.output).toEqual(quoted);
    } finally {
      await Promise.all([readmeRuntime.stop(), rm(scratch, { recursive: true, force: true })]);
    }
  });
});
