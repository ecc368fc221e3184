/**
 * vitest globalSetup: starts moto (`python3 -m moto.server`) on a free local port and hands its URL
 * to the tests as `inject("awsEndpoint")` (and env WEFT_TEST_AWS_ENDPOINT). When
 * WEFT_TEST_AWS_ENDPOINT is already set, that endpoint is used and nothing is started, so CI or a
 * developer can point the tests at LocalStack, DynamoDB Local, or another moto.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  interface ProvidedContext {
    awsEndpoint: string;
  }
}

const START_TIMEOUT_MS = 20_000;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.WEFT_TEST_AWS_ENDPOINT;
  if (given) {
    project.provide("awsEndpoint", given);
    return async () => {};
  }

  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn("python3", ["-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  try {
    await waitUntilUp(endpoint, child, () => stderr);
  } catch (error) {
    await stop(child);
    throw error;
  }
  process.env.WEFT_TEST_AWS_ENDPOINT = endpoint;
  project.provide("awsEndpoint", endpoint);
  return async () => {
    await stop(child);
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error("no free port"))));
    });
  });
}

async function waitUntilUp(endpoint: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let exited: string | undefined;
  child.once("exit", (code, signal) => {
    exited = `moto exited early (code ${code}, signal ${signal})`;
  });
  child.once("error", (error) => {
    exited = `moto could not start: ${error.message}`;
  });
  for (;;) {
    if (exited) throw new Error(`${exited}\n${stderr()}`);
    try {
      const response = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
      await response.body?.cancel();
      return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`moto did not answer on ${endpoint} within ${START_TIMEOUT_MS} ms\n${stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(timer);
}
