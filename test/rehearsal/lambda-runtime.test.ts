/**
 * The rehearsal's Lambda runtime: a handler module in its own process with only the given
 * environment, a context whose getRemainingTimeInMillis counts down to the Timeout, the invocation
 * killed at the Timeout (the environment discarded), and errors reported as Lambda reports them.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { FunctionPool } from "../../rehearsal/lambda/pool.js";

const dir = mkdtempSync(path.join(tmpdir(), "weft-rehearsal-runtime-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(
  path.join(dir, "index.mjs"),
  `export const handler = async (event, context) => {
     if (event.kind === "sleep") await new Promise((r) => setTimeout(r, event.ms));
     if (event.kind === "throw") throw Object.assign(new Error("boom"), { name: "TerminalError" });
     return {
       remaining: context.getRemainingTimeInMillis(),
       name: context.functionName,
       secret: process.env.REHEARSAL_TEST_SECRET ?? null,
       variable: process.env.MY_VARIABLE,
     };
   };`,
);

function pool(timeoutSeconds: number): FunctionPool {
  return new FunctionPool(
    {
      logicalId: "TestFunction",
      functionName: "test-fn",
      functionArn: "arn:aws:lambda:us-east-1:123456789012:function:test-fn",
      timeoutSeconds,
      memorySize: 128,
      runtime: "nodejs22.x",
      codeDir: dir,
      handler: "index.handler",
      env: {
        PATH: process.env.PATH ?? "",
        LAMBDA_TASK_ROOT: dir,
        _HANDLER: "index.handler",
        AWS_LAMBDA_FUNCTION_NAME: "test-fn",
        MY_VARIABLE: "x",
      },
    },
    { maxConcurrency: 2, log: new PassThrough() },
  );
}

describe("FunctionPool", () => {
  it("runs the handler with the function's environment only, and a context counting down from the Timeout", async () => {
    process.env.REHEARSAL_TEST_SECRET = "must-not-leak";
    const fn = pool(3);
    try {
      const outcome = await fn.invoke({ kind: "echo" });
      expect(outcome.ok).toBe(true);
      const result = (
        outcome as { result: { remaining: number; name: string; secret: unknown; variable: string } }
      ).result;
      expect(result.name).toBe("test-fn");
      expect(result.secret).toBeNull();
      expect(result.variable).toBe("x");
      expect(result.remaining).toBeGreaterThan(2000);
      expect(result.remaining).toBeLessThanOrEqual(3000);
      // Warm: the second invocation reuses the environment.
      expect((await fn.invoke({ kind: "echo" })).ok).toBe(true);
      expect(fn.stats.coldStarts).toBe(1);
    } finally {
      delete process.env.REHEARSAL_TEST_SECRET;
      await fn.stop();
    }
  });

  it("kills an invocation at its Timeout (Sandbox.Timedout) and discards the environment", async () => {
    const fn = pool(1);
    try {
      const started = Date.now();
      const outcome = await fn.invoke({ kind: "sleep", ms: 10_000 });
      expect(outcome).toMatchObject({ ok: false, errorType: "Sandbox.Timedout" });
      expect(Date.now() - started).toBeLessThan(5000);
      expect((await fn.invoke({ kind: "echo" })).ok).toBe(true);
      expect(fn.stats).toMatchObject({ timeouts: 1, coldStarts: 2 });
    } finally {
      await fn.stop();
    }
  });

  it("reports a handler's error by its name, and a killed environment as Runtime.ExitError", async () => {
    const fn = pool(5);
    try {
      expect(await fn.invoke({ kind: "throw" })).toMatchObject({
        ok: false,
        errorType: "TerminalError",
        errorMessage: "boom",
      });
      const running = fn.invoke({ kind: "sleep", ms: 4000 });
      while (fn.running === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(fn.killRunning()).toBe(1);
      expect(await running).toMatchObject({ ok: false, errorType: "Runtime.ExitError" });
    } finally {
      await fn.stop();
    }
  });
});
