/**
 * Ctrl-C on `weft run` (the compiled CLI, a real SIGINT) while its execution runs on a local runtime:
 * the execution goes on, and the command says so, with its id and the exact command that cancels
 * it, and exits 130; with --cancel-on-exit it cancels the execution and says so. One press delivered
 * twice (as npx forwards it) is one press: one message.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import type { ExecutionView } from "../../shared/engine/views.js";
import { PATIENT, waitForProgress } from "../support/progress.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";
import { spawnWeft, type WeftProcess, weft } from "./support.js";

let runtime: LocalRuntime;
let api: ApiClient;
let scratch: string;
let workflowFile: string;

beforeAll(async () => {
  // A short lease: a cancelled node's sleep hears the cancel at its next heartbeat (a third of it).
  runtime = await startRuntime("memory", { leaseSeconds: 3 });
  api = apiClient(runtime.url);
  scratch = await mkdtemp(path.join(tmpdir(), "weft-interrupt-"));
  workflowFile = path.join(scratch, "long-nap.json");
  await writeFile(
    workflowFile,
    JSON.stringify({ name: "long-nap", nodes: [{ id: "nap", type: "sleep", params: { ms: 10 * 60_000 } }] }),
  );
});
afterAll(async () => {
  await runtime?.stop();
  await rm(scratch, { recursive: true, force: true });
});

/** `weft run` of the long nap, once it shows the node running; and the execution's id. */
async function runUntilRunning(extra: string[] = []): Promise<{ run: WeftProcess; executionId: string }> {
  const run = spawnWeft(["run", workflowFile, "--api", runtime.url, "--interval", "50", ...extra]);
  const executionId = await waitForProgress("weft run to show the nap running", async () => {
    const id = /watching execution ([0-9a-f-]{36})/.exec(run.stdout())?.[1];
    if (id !== undefined && run.stdout().includes("nap RUNNING")) return { done: true, value: id };
    if (run.child.exitCode !== null)
      throw new Error(`weft run exited ${run.child.exitCode}: ${run.stderr()}`);
    return { done: false, progress: run.stdout().length, state: run.stdout() };
  });
  return { run, executionId };
}

describe("weft run on Ctrl-C", PATIENT, () => {
  it("leaves the execution running, says how to cancel it, and exits 130", async () => {
    const { run, executionId } = await runUntilRunning();
    run.child.kill("SIGINT");
    run.child.kill("SIGINT");
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(result.stderr.match(/interrupted/g)).toHaveLength(1);
    expect(result.stderr).toContain(`weft: interrupted — execution ${executionId} goes on running`);
    const cancelLine = /cancel it: +(weft cancel .*)$/m.exec(result.stderr)?.[1];
    expect(cancelLine).toBe(`weft cancel ${executionId} --api ${runtime.url}`);

    const view = (await api.call("GET", `/executions/${executionId}`)).body as ExecutionView;
    expect(view.status).toBe("RUNNING");
    expect(view.nodes[0]?.status).toBe("RUNNING");

    // The printed command, run as printed, does cancel it.
    const cancelled = await weft((cancelLine ?? "").split(" ").slice(1));
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect((await api.waitForEnd(executionId)).status).toBe("CANCELLED");
  });

  it("with --cancel-on-exit, cancels the execution and says so, then exits 130", async () => {
    const { run, executionId } = await runUntilRunning(["--cancel-on-exit"]);
    run.child.kill("SIGINT");
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain(
      `weft: interrupted — cancel requested (--cancel-on-exit): execution ${executionId} is CANCELLED`,
    );
    const view = await api.waitForEnd(executionId);
    expect(view.status).toBe("CANCELLED");
  });

  it("--json: says the same as one JSON document on standard output", async () => {
    const run = spawnWeft(["run", workflowFile, "--api", runtime.url, "--interval", "50", "--json"]);
    // --json prints nothing while it watches: the execution is found through the API (the earlier
    // ones here are cancelled).
    const executionId = await waitForProgress("the --json run's nap to run", async () => {
      const { body } = await api.call("GET", "/executions?workflow=long-nap&status=RUNNING");
      const id: string | undefined = body.executions[0]?.executionId;
      const view = id === undefined ? undefined : (await api.call("GET", `/executions/${id}`)).body;
      if (id !== undefined && view?.nodes[0]?.status === "RUNNING") return { done: true, value: id };
      if (run.child.exitCode !== null)
        throw new Error(`weft run exited ${run.child.exitCode}: ${run.stderr()}`);
      return { done: false, progress: [id, view?.nodes[0]?.status] };
    });
    run.child.kill("SIGINT");
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(JSON.parse(result.stdout)).toEqual({
      interrupted: true,
      executionId,
      cancelled: false,
      cancelCommand: `weft cancel ${executionId} --api ${runtime.url}`,
    });
    expect(result.stderr).toContain(`execution ${executionId} goes on running`);
    await api.call("POST", `/executions/${executionId}/cancel`, {});
    expect((await api.waitForEnd(executionId)).status).toBe("CANCELLED");
  });
});
