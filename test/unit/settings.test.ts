/**
 * The settings module (shared/config/settings.ts) as the runtime reads it, the AWS clients it
 * configures, and the documentation generated or checked from it.
 */

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONTEXT_KEYS } from "../../infra/lib/context.js";
import { loadConfig, loadEngineSettings } from "../../shared/config/env.js";
import { PROP_SETTING_KEYS, SETTINGS } from "../../shared/config/settings.js";
import {
  createAwsClients,
  createDeployedTaskRegistry,
  createEngineFromEnv,
  engineOptionsFromConfig,
} from "../../shared/config/wiring.js";
import { DEPLOY_DOC, renderSettingsTable, withSettingsTable } from "../../tools/settings-table.js";

const base = {
  WEFT_TABLE_NAME: "t",
  WEFT_QUEUE_URL: "http://127.0.0.1:1/q",
  WEFT_EVENT_BUS_NAME: "bus",
  WEFT_PAYLOAD_BUCKET: "payloads",
};

describe("reading the settings", () => {
  it("needs no dead-letter queue URL, and defaults attempts to 3 with no worker timeout", () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({ leaseSeconds: 60, defaultMaxAttempts: 3, sweep: {} });
    expect(config.workerTimeoutSeconds).toBeUndefined();
    expect(config).not.toHaveProperty("deadLetterUrl");
  });

  it("reads WEFT_DEFAULT_MAX_ATTEMPTS and WEFT_WORKER_TIMEOUT_SECONDS into the engine's options", () => {
    const settings = loadEngineSettings({
      WEFT_DEFAULT_MAX_ATTEMPTS: "1",
      WEFT_WORKER_TIMEOUT_SECONDS: "120",
    });
    expect(settings).toMatchObject({ defaultMaxAttempts: 1, workerTimeoutSeconds: 120 });
    expect(engineOptionsFromConfig(settings)).toMatchObject({
      defaultMaxAttempts: 1,
      workerTimeoutSeconds: 120,
    });
    const engine = createEngineFromEnv({
      ...base,
      WEFT_DEFAULT_MAX_ATTEMPTS: "2",
      WEFT_WORKER_TIMEOUT_SECONDS: "900",
    });
    expect(engine.options).toMatchObject({ defaultMaxAttempts: 2, workerTimeoutSeconds: 900 });
  });

  it("names every bad variable in one error", () => {
    expect(() =>
      loadConfig({
        ...base,
        WEFT_TABLE_NAME: "",
        WEFT_DEFAULT_MAX_ATTEMPTS: "0",
        WEFT_WORKER_TIMEOUT_SECONDS: "901",
        AWS_ENDPOINT_URL_LAMBDA: "not a url",
      }),
    ).toThrow(
      /WEFT_TABLE_NAME: must be set.*WEFT_DEFAULT_MAX_ATTEMPTS: must be at least 1.*WEFT_WORKER_TIMEOUT_SECONDS: must be at most 900.*AWS_ENDPOINT_URL_LAMBDA/,
    );
  });

  it("gives the Lambda client the endpoint rules of the others", () => {
    expect(loadConfig({ ...base, AWS_ENDPOINT_URL: "http://127.0.0.1:5000" }).endpoint).toBe(
      "http://127.0.0.1:5000",
    );
    expect(
      loadConfig({
        ...base,
        AWS_ENDPOINT_URL: "http://127.0.0.1:5000",
        AWS_ENDPOINT_URL_LAMBDA: "http://127.0.0.1:6000",
      }).endpoint,
    ).toMatchObject({ dynamodb: "http://127.0.0.1:5000", lambda: "http://127.0.0.1:6000" });
  });
});

describe("the Lambda client of createAwsClients", () => {
  const invoked: string[] = [];
  const server = createServer((request, response) => {
    invoked.push(`${request.method} ${request.url}`);
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }));
  });
  let url = "";
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("is the one the deployed `lambda` task type invokes, with the clients' endpoint and credentials", async () => {
    const clients = createAwsClients({
      endpoint: { lambda: url },
      region: "eu-west-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
    });
    try {
      expect(await clients.lambda.config.region()).toBe("eu-west-1");
      const registry = createDeployedTaskRegistry(loadConfig(base), clients);
      const lambdaTask = registry.get("lambda");
      const output = await lambdaTask?.run({
        input: { n: 1 },
        params: { functionName: "score-lead" },
        deps: {},
        context: {
          executionId: "ex",
          nodeId: "score",
          attempt: 1,
          idempotencyKey: "ex/score/1",
          signal: new AbortController().signal,
          deadline: Date.now() + 10_000,
          sleep: () => Promise.resolve(),
          now: () => Date.now(),
        },
      });
      expect(output).toEqual({ ok: true });
      expect(invoked).toEqual(["POST /2015-03-31/functions/score-lead/invocations"]);
    } finally {
      clients.destroy();
    }
  });
});

describe("docs/deploy.md", () => {
  const doc = readFileSync(DEPLOY_DOC, "utf8");

  it("holds the current table of the functions' environment (regenerate: npx tsx tools/settings-table.ts)", () => {
    expect(doc).toContain(renderSettingsTable());
    expect(withSettingsTable(doc)).toBe(doc);
  });

  /** The context table's rows: key → default cell. */
  const contextRows = new Map(
    [...doc.matchAll(/^\| `(weft:[A-Za-z]+)` \|([^|]*)\|/gm)].map((match) => [match[1]!, match[2]!.trim()]),
  );

  it("lists exactly the context keys the sample app reads", () => {
    expect([...contextRows.keys()].sort()).toEqual([...CONTEXT_KEYS].sort());
  });

  it("gives the runtime's own default for each setting's context key that has one", () => {
    for (const key of PROP_SETTING_KEYS) {
      const entry = SETTINGS[key];
      const fallback = entry.schema.safeParse(undefined);
      const cell = contextRows.get(entry.setBy.context);
      expect(cell, entry.setBy.context).toBeDefined();
      if (fallback.success && fallback.data !== undefined) expect(cell).toBe(`\`${String(fallback.data)}\``);
      if ("whenUnset" in entry && entry.whenUnset.startsWith("`"))
        expect(cell).toContain(entry.whenUnset.split(" ")[0]);
    }
  });
});
