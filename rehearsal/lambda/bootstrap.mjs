// The rehearsal's Lambda runtime inside one execution environment (a child process): it imports the
// bundled handler from LAMBDA_TASK_ROOT as the Node.js runtime does (`_HANDLER` = file.export), then
// runs one invocation at a time as the parent asks over IPC, with a Lambda context whose
// getRemainingTimeInMillis counts down to the deadline the parent enforces.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const send = (message) => process.send?.(message);

// The functions' clock (clock.ts): real time plus an offset the harness may set, read at each
// invocation. The invocation's deadline keeps real time: the parent enforces it.
const realNow = Date.now.bind(Date);
let clockOffsetMs = 0;
function readClockOffset() {
  const file = process.env.WEFT_REHEARSAL_CLOCK_OFFSET_FILE;
  if (!file || !existsSync(file)) return 0;
  const ms = Number(readFileSync(file, "utf8"));
  return Number.isFinite(ms) ? ms : 0;
}
Date.now = () => realNow() + clockOffsetMs;

/** @param {unknown} error */
function describe(error) {
  if (error instanceof Error) {
    return {
      errorType: error.name || "Error",
      errorMessage: error.message,
      trace: (error.stack ?? "").split("\n").slice(0, 20),
    };
  }
  return { errorType: typeof error, errorMessage: String(error), trace: [] };
}

async function loadHandler() {
  const taskRoot = process.env.LAMBDA_TASK_ROOT ?? process.cwd();
  const spec = process.env._HANDLER ?? "index.handler";
  const dot = spec.lastIndexOf(".");
  const moduleName = spec.slice(0, dot);
  const exportName = spec.slice(dot + 1);
  const file = [".mjs", ".js", ".cjs"]
    .map((ext) => path.join(taskRoot, moduleName + ext))
    .find((f) => existsSync(f));
  if (!file)
    throw Object.assign(new Error(`Cannot find module '${moduleName}'`), {
      name: "Runtime.ImportModuleError",
    });
  const loaded = await import(pathToFileURL(file).href);
  const handler = loaded[exportName];
  if (typeof handler !== "function") {
    throw Object.assign(new Error(`${spec} is undefined or not exported`), {
      name: "Runtime.HandlerNotFound",
    });
  }
  return handler;
}

function context(invoke) {
  const unsupported = () => {
    throw new Error("the legacy context.done/succeed/fail callbacks are not supported");
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
    invokedFunctionArn: invoke.invokedFunctionArn,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: invoke.requestId,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    getRemainingTimeInMillis: () => Math.max(0, invoke.deadline - realNow()),
    done: unsupported,
    succeed: unsupported,
    fail: unsupported,
  };
}

// The parent going away ends the environment (no orphans).
process.on("disconnect", () => process.exit(0));

let handler;
try {
  handler = await loadHandler();
  send({ type: "ready" });
} catch (error) {
  send({ type: "init-error", error: describe(error) });
  process.exit(1);
}

process.on("message", async (invoke) => {
  if (invoke?.type !== "invoke") return;
  process.env._X_AMZN_TRACE_ID = invoke.traceId;
  clockOffsetMs = readClockOffset();
  try {
    const result = await handler(invoke.event, context(invoke));
    send({ type: "result", id: invoke.id, ok: true, result: result === undefined ? null : result });
  } catch (error) {
    send({ type: "result", id: invoke.id, ok: false, error: describe(error) });
  }
});
