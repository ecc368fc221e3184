/**
 * vitest globalSetup: starts the AWS emulators once for the whole run (tools/emulators/set.ts) and hands
 * their endpoints to the tests as `inject("awsEndpoints")` (`{ dynamodb, sqs, eventbridge, s3 }`) and their
 * kind as `inject("awsEmulator")`.
 *
 * WEFT_TEST_EMULATOR picks the set: `moto` (default; one moto serves all four services),
 * `dynamodb-local` (AWS's DynamoDB Local + fauxqs for SQS + a moto for EventBridge and S3) or
 * `localstack` (LocalStack in a container through testcontainers: needs a Docker engine, and stops at
 * once with a message saying so when there is none; LOCALSTACK_AUTH_TOKEN is passed to the container).
 *
 * When WEFT_TEST_ENDPOINT (or its older name WEFT_TEST_AWS_ENDPOINT) is set, that one endpoint serves
 * every service and nothing is started, so CI or a developer can point the tests at a LocalStack or
 * another emulator already running (`WEFT_TEST_ENDPOINT=http://127.0.0.1:4566 npm run test:localstack`).
 * WEFT_TEST_EMULATOR then only names it. An endpoint that does not answer stops the run at once.
 */
import type { TestProject } from "vitest/node";
import {
  EMULATOR_KINDS,
  type EmulatorKind,
  isEmulatorKind,
  type ServiceEndpoints,
  startEmulatorSet,
} from "../../tools/emulators/set.js";

declare module "vitest" {
  interface ProvidedContext {
    awsEndpoints: ServiceEndpoints;
    awsEmulator: EmulatorKind;
  }
}

/** The part of vitest's TestProject this setup uses (so it can run outside vitest too). */
export type SetupProject = Pick<TestProject, "provide">;

export default async function setup(project: SetupProject): Promise<() => Promise<void>> {
  const requested = process.env.WEFT_TEST_EMULATOR || "moto";
  if (!isEmulatorKind(requested)) {
    throw new Error(`WEFT_TEST_EMULATOR must be one of ${EMULATOR_KINDS.join(", ")}, got "${requested}"`);
  }
  const given = process.env.WEFT_TEST_ENDPOINT || process.env.WEFT_TEST_AWS_ENDPOINT;
  if (given) {
    await requireAnswer(given);
    project.provide("awsEndpoints", { dynamodb: given, sqs: given, eventbridge: given, s3: given });
    project.provide("awsEmulator", requested);
    return async () => {};
  }
  const emulators = await startEmulatorSet(requested);
  project.provide("awsEndpoints", emulators.endpoints);
  project.provide("awsEmulator", emulators.kind);
  return () => emulators.stop();
}

/** Throws at once (within a few seconds) when nothing answers HTTP at `endpoint`; any status will do. */
async function requireAnswer(endpoint: string): Promise<void> {
  try {
    const response = await fetch(endpoint, { signal: AbortSignal.timeout(5000) });
    await response.body?.cancel();
  } catch (error) {
    const cause = (error as Error & { cause?: NodeJS.ErrnoException }).cause;
    throw new Error(
      `WEFT_TEST_ENDPOINT=${endpoint} does not answer (${cause?.code ?? cause?.message ?? (error as Error).message}): ` +
        "start the emulator first (e.g. LocalStack on :4566), or unset WEFT_TEST_ENDPOINT to let the tests start one",
    );
  }
}
