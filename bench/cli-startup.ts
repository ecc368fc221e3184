/**
 * How fast the `weft` command starts: wall time of whole processes, as a user at a shell sees it,
 * against `node -e 0` on the same machine (Node's own start, which no CLI can go below). `status`
 * asks a local runtime (memory backend, in this process) about a real execution, so its figure
 * includes the request.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalRuntime } from "../local/runtime.js";
import { ensurePackageBuilt } from "../tools/build-package.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BIN = path.join(ROOT, "bin", "weft.js");

export interface CliStartupResult {
  command: string;
  runs: number;
  minMs: number;
  medianMs: number;
  p90Ms: number;
  /** The command's median less `node -e 0`'s: what weft itself adds. */
  overNodeMs: number;
}

/** One process, start to exit, in ms. Asynchronous: the runtime `status` asks lives in this process. */
function timeRun(args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, {
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code === 0) resolve(ms);
      else reject(new Error(`${args.join(" ")} exited ${code}: ${stderr.slice(0, 500)}`));
    });
  });
}

async function timeRuns(args: readonly string[], runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await timeRun(args));
  return times.sort((a, b) => a - b);
}

const at = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

export async function measureCliStartup(options: { runs?: number } = {}): Promise<CliStartupResult[]> {
  const runs = options.runs ?? 20;
  await ensurePackageBuilt();
  const runtime = await startLocalRuntime({ backend: "memory", port: 0, consoleDir: false, env: {} });
  try {
    const register = await fetch(`${runtime.url}/workflows`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "bench-cli", nodes: [{ id: "a", type: "pass", params: { value: 1 } }] }),
    });
    if (!register.ok) throw new Error(`register answered ${register.status}`);
    const started = await fetch(`${runtime.url}/executions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ workflow: "bench-cli", input: {} }),
    });
    const { executionId } = (await started.json()) as { executionId: string };
    const commands: Array<{ command: string; args: string[] }> = [
      { command: "node -e 0", args: ["-e", "0"] },
      { command: "weft --help", args: [BIN, "--help"] },
      { command: "weft status ID", args: [BIN, "status", executionId, "--api", runtime.url] },
    ];
    const results = [];
    for (const { command, args } of commands) {
      await timeRuns(args, 2); // warm the file cache
      const times = await timeRuns(args, runs);
      results.push({
        command,
        runs,
        minMs: times[0] ?? Number.NaN,
        medianMs: at(times, 0.5),
        p90Ms: at(times, 0.9),
      });
    }
    const node = results[0]?.medianMs ?? 0;
    return results.map((r) => ({ ...r, overNodeMs: r.medianMs - node }));
  } finally {
    await runtime.stop();
  }
}
