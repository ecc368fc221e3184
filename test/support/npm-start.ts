/**
 * `npm start` as a process (local/main.ts under tsx's loader, as `npm start` runs it) on the aws
 * backend (the emulator), on fresh resources or on those of an earlier process (a restart after a
 * crash). Every process started is killed at the end of the file that started it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, inject } from "vitest";
import type { LocalResourceNames } from "../../local/runtime.js";
import { repoRoot } from "../cli/support.js";
import { uniqueName } from "./aws.js";
import { waitForProgress } from "./progress.js";

export interface Runtime {
  child: ChildProcess;
  output(): string;
  url: string;
  names: LocalResourceNames;
  exited: Promise<number | null>;
}

const started: Runtime[] = [];
afterAll(async () => {
  for (const runtime of started) {
    if (runtime.child.exitCode === null && runtime.child.signalCode === null) {
      runtime.child.kill("SIGKILL");
      await runtime.exited;
    }
  }
});

/** How a process is started beyond the defaults: its sweeper, and settings from the environment. */
export interface NpmStartOptions {
  /** Seconds between sweeper runs (default 0: no sweeper). */
  sweepIntervalSeconds?: number;
  /** WEFT_* settings (shared/config/settings.ts), e.g. a short lease. */
  env?: Record<string, string>;
}

/**
 * `npm start -- --port 0 --sweep-interval 0` on fresh emulator resources (or `reuse`d ones); resolves
 * once it listens.
 */
export async function startNpmStart(
  reuse?: LocalResourceNames,
  options: NpmStartOptions = {},
): Promise<Runtime> {
  const endpoints = inject("awsEndpoints");
  const names: LocalResourceNames = reuse ?? {
    table: uniqueName("npm-start-table"),
    queue: uniqueName("npm-start-tasks"),
    deadLetter: uniqueName("npm-start-dlq"),
    eventBus: uniqueName("npm-start-bus"),
    payloadBucket: uniqueName("npm-start-payloads").toLowerCase(),
  };
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "local/main.ts",
      "--port",
      "0",
      "--sweep-interval",
      String(options.sweepIntervalSeconds ?? 0),
    ],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        NO_COLOR: "1",
        AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
        AWS_ENDPOINT_URL_SQS: endpoints.sqs,
        AWS_ENDPOINT_URL_EVENTBRIDGE: endpoints.eventbridge,
        AWS_ENDPOINT_URL_S3: endpoints.s3,
        AWS_REGION: "us-east-1",
        AWS_ACCESS_KEY_ID: "test",
        AWS_SECRET_ACCESS_KEY: "test",
        WEFT_TABLE_NAME: names.table,
        WEFT_QUEUE_NAME: names.queue,
        WEFT_DLQ_NAME: names.deadLetter,
        WEFT_EVENT_BUS_NAME: names.eventBus,
        WEFT_PAYLOAD_BUCKET: names.payloadBucket,
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const runtime: Runtime = { child, output: () => output, url: "", names, exited };
  started.push(runtime);
  runtime.url = await waitForProgress("npm start to listen", async () => {
    const url = /API listening on (http:\/\/[\d.:]+)/.exec(output)?.[1];
    if (url !== undefined) return { done: true, value: url };
    if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}:\n${output}`);
    return { done: false, progress: output.length, state: output };
  });
  return runtime;
}
