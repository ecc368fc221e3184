/**
 * What the emulator launchers share: a free loopback port, waiting for a child process to answer HTTP,
 * and stopping it.
 */
import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export interface RunningEmulator {
  endpoint: string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
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

/** Keeps the last 4000 characters the child wrote to stderr, for error messages. */
export function stderrTail(child: ChildProcess): () => string {
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-4000);
  });
  return () => stderr;
}

/** Resolves once `url` answers HTTP at all (any status); throws if the child exits first or time runs out. */
export async function waitForHttp(
  name: string,
  url: string,
  child: ChildProcess,
  stderr: () => string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: string | undefined;
  child.once("exit", (code, signal) => {
    exited = `${name} exited early (code ${code}, signal ${signal})`;
  });
  child.once("error", (error) => {
    exited = `${name} could not start: ${error.message}`;
  });
  for (;;) {
    if (exited) throw new Error(`${exited}\n${stderr()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await response.body?.cancel();
      return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`${name} did not answer on ${url} within ${timeoutMs} ms\n${stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** SIGTERM, then SIGKILL after 3 s; resolves when the child has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(timer);
}
