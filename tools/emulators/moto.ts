/**
 * Starts moto (like `python3 -m moto.server`, see MOTO_LAUNCHER) on a free loopback port. Used by
 * the test setup and the benchmark; stop() ends it (and it ends itself if its parent dies).
 */
import { spawn } from "node:child_process";
import { freePort, type RunningEmulator, stderrTail, stopChild, waitForHttp } from "./process.js";

export { freePort, type RunningEmulator } from "./process.js";

const START_TIMEOUT_MS = 20_000;

/**
 * What `python3 -m moto.server -H HOST -p PORT` runs, with one change: DynamoDB requests are served
 * one at a time. moto's threaded server does not lock its DynamoDB backend, so two concurrent
 * UpdateItems on one item can both pass their conditions and one update is lost (seen with 20
 * concurrent `ADD` arrivals: all "succeeded", some were missing). Real DynamoDB serializes writes
 * per item, and the store's guarantees depend on it, so the emulator must too. SQS and EventBridge
 * stay concurrent (SQS long polls would otherwise block everything). The launcher also exits when
 * its parent (the vitest process) goes away, so a killed test run leaves no emulator behind.
 */
const MOTO_LAUNCHER = `
import os, sys, threading, time
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

host, port = sys.argv[1], int(sys.argv[2])
os.environ.setdefault("MOTO_PORT", str(port))
app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()

def serialized_dynamodb(environ, start_response):
    if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
        with lock:
            return list(app(environ, start_response))
    return app(environ, start_response)

# Exit with the test runner, even when it dies without running its teardown.
parent = os.getppid()
def watch_parent():
    while True:
        time.sleep(1)
        if os.getppid() != parent:
            os._exit(0)
threading.Thread(target=watch_parent, daemon=True).start()

run_simple(host, port, serialized_dynamodb, threaded=True)
`;

export async function startMoto(): Promise<RunningEmulator> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn("python3", ["-c", MOTO_LAUNCHER, "127.0.0.1", String(port)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr = stderrTail(child);
  try {
    await waitForHttp("moto", `${endpoint}/moto-api/`, child, stderr, START_TIMEOUT_MS);
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  return { endpoint, stop: () => stopChild(child) };
}
