/**
 * WEFT_TEST_EMULATOR=localstack without a Docker engine: the test setup stops at once with a message
 * saying so (and what to do instead), rather than waiting on testcontainers. Runs the setup function in a
 * child process whose DOCKER_HOST is a socket that does not exist.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Calls the globalSetup as vitest would (a stub project), and reports how it ended. */
const SCRIPT = `
const { default: setup } = await import("./test/setup/emulators.ts");
try {
  const teardown = await setup({ provide() {} });
  console.log("STARTED");
  await teardown();
} catch (error) {
  console.error(error.message);
  process.exit(3);
}
`;

const scratch = mkdtempSync(path.join(tmpdir(), "weft-no-docker-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function runSetup(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.WEFT_TEST_ENDPOINT;
  delete childEnv.WEFT_TEST_AWS_ENDPOINT;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", SCRIPT], {
      cwd: repoRoot,
      env: childEnv,
      stdio: ["ignore", "pipe", "pipe"],
      // A guard only: the setup is expected to end within a second or two. Were it to hang (waiting
      // on a container runtime), this kills it and the assertions below fail.
      timeout: 60_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("WEFT_TEST_EMULATOR=localstack without Docker", () => {
  it("stops the setup at once with a message naming the missing engine and the alternative", async () => {
    const socket = path.join(scratch, "docker.sock"); // never created
    const result = await runSetup({ WEFT_TEST_EMULATOR: "localstack", DOCKER_HOST: `unix://${socket}` });
    expect(result.stdout).not.toContain("STARTED");
    expect(result.code).toBe(3); // the setup threw (not killed by the guard, which gives code null)
    expect(result.stderr).toContain("WEFT_TEST_EMULATOR=localstack: no Docker engine found");
    expect(result.stderr).toContain(`DOCKER_HOST=unix://${socket}: no socket at ${socket}`);
    expect(result.stderr).toContain("WEFT_TEST_ENDPOINT=http://127.0.0.1:4566 npm run test:localstack");
  }, 120_000);
});
