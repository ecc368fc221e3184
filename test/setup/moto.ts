/**
 * vitest globalSetup: starts moto once for the whole run (tools/emulators/moto.ts) and hands its
 * URL to the tests as `inject("awsEndpoint")` (and env WEFT_TEST_AWS_ENDPOINT). When
 * WEFT_TEST_AWS_ENDPOINT is already set, that endpoint is used and nothing is started, so CI or a
 * developer can point the tests at LocalStack, DynamoDB Local, or another moto.
 */
import type { TestProject } from "vitest/node";
import { startMoto } from "../../tools/emulators/moto.js";

declare module "vitest" {
  interface ProvidedContext {
    awsEndpoint: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.WEFT_TEST_AWS_ENDPOINT;
  if (given) {
    project.provide("awsEndpoint", given);
    return async () => {};
  }
  const moto = await startMoto();
  process.env.WEFT_TEST_AWS_ENDPOINT = moto.endpoint;
  project.provide("awsEndpoint", moto.endpoint);
  return () => moto.stop();
}
