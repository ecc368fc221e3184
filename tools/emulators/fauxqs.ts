/**
 * Starts fauxqs (npm `fauxqs`, an in-memory SQS/SNS/S3 emulator written in Node) in a child Node
 * process on a free loopback port. It runs beside the test workers rather than inside the vitest
 * process, and it ends itself if its parent dies. Only its SQS is used here.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort, type RunningEmulator, stderrTail, stopChild, waitForHttp } from "./process.js";

const START_TIMEOUT_MS = 20_000;

/** Serves fauxqs on argv's port and exits on SIGTERM/SIGINT or when its parent goes away. */
const LAUNCHER = `
const { startFauxqs } = await import("fauxqs");
const port = Number(process.argv[1]);
const server = await startFauxqs({ port, host: "localhost", logger: false });
const parent = process.ppid;
const end = async () => { await server.stop().catch(() => {}); process.exit(0); };
process.on("SIGTERM", end);
process.on("SIGINT", end);
setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 1000).unref();
`;

export async function startFauxqs(): Promise<RunningEmulator> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  // The repository root, where the launcher's `import("fauxqs")` resolves from.
  const cwd = fileURLToPath(new URL("../../", import.meta.url));
  const child = spawn(process.execPath, ["--input-type=module", "-e", LAUNCHER, "--", String(port)], {
    cwd,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr = stderrTail(child);
  try {
    await waitForHttp("fauxqs", `${endpoint}/health`, child, stderr, START_TIMEOUT_MS);
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return { endpoint, stop: () => stopChild(child) };
}
