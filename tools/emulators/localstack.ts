/**
 * Starts LocalStack (one endpoint for DynamoDB, SQS, EventBridge and S3) in a container through
 * `@testcontainers/localstack`. Needs a Docker engine; without one it stops at once with a message
 * that says so (NoDockerEngineError), instead of leaving testcontainers to time out.
 *
 * - LOCALSTACK_AUTH_TOKEN is passed to the container: the LocalStack image needs it since March 2026.
 * - WEFT_TEST_LOCALSTACK_IMAGE overrides the image (default LOCALSTACK_IMAGE, pinned).
 * - A LocalStack (or any emulator) already running needs none of this: the tests take its URL from
 *   WEFT_TEST_ENDPOINT (test/setup/emulators.ts).
 */
import { existsSync } from "node:fs";
import { connect } from "node:net";
import type { RunningEmulator } from "./process.js";

/** The image started when WEFT_TEST_LOCALSTACK_IMAGE does not name another (calendar-versioned). */
export const LOCALSTACK_IMAGE = "localstack/localstack:2026.09.0";

/** How long a Docker engine may take to answer before it counts as absent. */
const ENGINE_CHECK_MS = 10_000;

export class NoDockerEngineError extends Error {
  override readonly name = "NoDockerEngineError";
  constructor(readonly reason: string) {
    super(
      `WEFT_TEST_EMULATOR=localstack: no Docker engine found (${reason}), so LocalStack cannot be started. ` +
        "Start Docker (or set DOCKER_HOST to a running engine), or point the tests at a LocalStack that is " +
        "already running: WEFT_TEST_ENDPOINT=http://127.0.0.1:4566 npm run test:localstack",
    );
  }
}

export async function startLocalStack(env: NodeJS.ProcessEnv = process.env): Promise<RunningEmulator> {
  await requireDockerEngine(env);
  const image = env.WEFT_TEST_LOCALSTACK_IMAGE || LOCALSTACK_IMAGE;
  const token = env.LOCALSTACK_AUTH_TOKEN;
  if (!token && !env.WEFT_TEST_LOCALSTACK_IMAGE) {
    throw new Error(
      `WEFT_TEST_EMULATOR=localstack: LOCALSTACK_AUTH_TOKEN is not set, and the LocalStack image (${image}) ` +
        "does not start without one since March 2026. Set it (from your LocalStack account), or set " +
        "WEFT_TEST_LOCALSTACK_IMAGE to an image that needs none.",
    );
  }
  const { LocalstackContainer } = await import("@testcontainers/localstack");
  const container = await new LocalstackContainer(image)
    .withEnvironment(token ? { LOCALSTACK_AUTH_TOKEN: token } : {})
    .start();
  return {
    endpoint: container.getConnectionUri(),
    stop: async () => {
      await container.stop();
    },
  };
}

/**
 * Resolves when a Docker engine answers; throws NoDockerEngineError (quickly) when none does.
 * DOCKER_HOST, when set, is the only engine considered (as for the docker CLI): testcontainers would
 * otherwise fall back to /var/run/docker.sock. Then testcontainers' own runtime strategies decide.
 */
export async function requireDockerEngine(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const dockerHost = env.DOCKER_HOST;
  if (dockerHost) {
    const unreachable = await dockerHostUnreachable(dockerHost);
    if (unreachable) throw new NoDockerEngineError(`DOCKER_HOST=${dockerHost}: ${unreachable}`);
  }
  const { getContainerRuntimeClient } = await import("testcontainers");
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new NoDockerEngineError(`the container runtime did not answer within ${ENGINE_CHECK_MS} ms`)),
      ENGINE_CHECK_MS,
    );
  });
  try {
    await Promise.race([getContainerRuntimeClient(), timedOut]);
  } catch (error) {
    if (error instanceof NoDockerEngineError) throw error;
    throw new NoDockerEngineError(
      `testcontainers: ${(error as Error).message}; tried DOCKER_HOST, ~/.testcontainers.properties, ` +
        "/var/run/docker.sock and the rootless Docker sockets",
    );
  } finally {
    clearTimeout(timer);
  }
}

/** Why DOCKER_HOST cannot be the engine (no socket, nothing listening), or undefined if it may be. */
async function dockerHostUnreachable(dockerHost: string): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(dockerHost);
  } catch {
    return "not a URL";
  }
  if (url.protocol === "unix:") {
    if (!existsSync(url.pathname)) return `no socket at ${url.pathname}`;
    return canConnect({ path: url.pathname });
  }
  if (url.protocol === "tcp:" || url.protocol === "http:" || url.protocol === "https:") {
    const port = Number(url.port) || (url.protocol === "https:" ? 2376 : 2375);
    return canConnect({ host: url.hostname, port });
  }
  return undefined; // ssh://, npipe://: left to testcontainers
}

function canConnect(target: { path: string } | { host: string; port: number }): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect(target);
    const done = (reason: string | undefined) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(ENGINE_CHECK_MS, () => done(`no answer within ${ENGINE_CHECK_MS} ms`));
    socket.once("connect", () => done(undefined));
    socket.once("error", (error: NodeJS.ErrnoException) => done(error.code ?? error.message));
  });
}
