/**
 * vitest globalSetup: starts the AWS emulators once for the whole run (tools/emulators/set.ts) and hands
 * their endpoints to the tests as `inject("awsEndpoints")` (`{ dynamodb, sqs, eventbridge, s3 }`) and their
 * kind as `inject("awsEmulator")`.
 *
 * WEFT_TEST_EMULATOR picks the set: `moto` (default; one moto serves all three services) or
 * `dynamodb-local` (AWS's DynamoDB Local + fauxqs for SQS + a moto for EventBridge). When
 * WEFT_TEST_AWS_ENDPOINT is set, that one endpoint serves every service and nothing is started, so CI or
 * a developer can point the tests at LocalStack or another running emulator.
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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const requested = process.env.WEFT_TEST_EMULATOR || "moto";
  if (!isEmulatorKind(requested)) {
    throw new Error(`WEFT_TEST_EMULATOR must be one of ${EMULATOR_KINDS.join(", ")}, got "${requested}"`);
  }
  const given = process.env.WEFT_TEST_AWS_ENDPOINT;
  if (given) {
    project.provide("awsEndpoints", { dynamodb: given, sqs: given, eventbridge: given, s3: given });
    project.provide("awsEmulator", requested);
    return async () => {};
  }
  const emulators = await startEmulatorSet(requested);
  project.provide("awsEndpoints", emulators.endpoints);
  project.provide("awsEmulator", emulators.kind);
  return () => emulators.stop();
}
