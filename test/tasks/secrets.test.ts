/**
 * Secret references of the `http` task, end to end through the local runtime (`npm start`'s code):
 * on the emulator, a Secrets Manager secret and an SSM SecureString are created, a workflow whose
 * headers refer to them is registered and run over the HTTP API against a loopback server that
 * records what it got; the values arrive, and nothing weft stores or answers holds them. In memory,
 * weft.config.json's `secrets` play the same part. Plain-text credentials are refused at
 * registration, and a definition stored before that rule is redacted on read.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { CreateSecretCommand, DeleteSecretCommand } from "@aws-sdk/client-secrets-manager";
import { DeleteParameterCommand, PutParameterCommand } from "@aws-sdk/client-ssm";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { type AwsClients, createAwsClients } from "../../shared/config/wiring.js";
import { definitionHash } from "../../shared/domain/hash.js";
import { loadLocalConfig, localTaskOptions } from "../../shared/tasks/local-config.js";
import { uniqueName } from "../support/aws.js";
import { EMULATOR } from "../support/backends.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

let server: Server;
let baseUrl = "";
const received: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    received.push(req.headers);
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "x-served-by": "test" });
      res.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** An http node sending two credentials by reference, and a plain header. */
function workflow(name: string, authorization: string, apiKey: string) {
  return {
    name,
    nodes: [
      {
        id: "call",
        type: "http",
        params: {
          method: "POST",
          url: `${baseUrl}/hook`,
          headers: {
            Authorization: { secret: authorization },
            "X-Api-Key": { secret: apiKey },
            "X-Trace": "plain",
          },
          body: { hello: "world" },
        },
      },
    ],
  };
}

/** Runs `definition` over the API and returns everything weft keeps or answers about it, as text. */
async function runAndCollect(runtime: LocalRuntime, api: ApiClient, definition: { name: string }) {
  const registered = await api.call("POST", "/workflows", definition);
  expect(registered.status).toBe(201);
  const started = await api.call("POST", "/executions", { workflow: definition.name, input: {} });
  expect(started.status).toBe(202);
  const executionId = started.body.executionId as string;
  const view = await api.waitForEnd(executionId);
  const store = runtime.ports.store;
  const texts = {
    storedDefinition: JSON.stringify(await store.getWorkflowVersion(definition.name)),
    storedNode: JSON.stringify(await store.getNode(executionId, "call")),
    history: JSON.stringify(await store.listHistory(executionId)),
    executionView: JSON.stringify(view),
    events: JSON.stringify((await api.call("GET", `/executions/${executionId}/events`)).body),
    getWorkflow: JSON.stringify((await api.call("GET", `/workflows/${definition.name}`)).body),
  };
  return { view, texts };
}

describe("secret references on the emulator (Secrets Manager and SSM Parameter Store)", () => {
  // moto serves Secrets Manager and SSM beside EventBridge (LocalStack too): the EventBridge endpoint.
  const endpoint = inject("awsEndpoints").eventbridge;
  const secretName = uniqueName("weft-test/api-token");
  const parameterName = `/${uniqueName("weft-test")}/api-key`;
  const token = `Bearer ${uniqueName("sm-value")}`;
  const apiKey = uniqueName("ssm-value");
  let clients: AwsClients;
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    clients = createAwsClients({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 3,
    });
    await clients.secretsManager.send(new CreateSecretCommand({ Name: secretName, SecretString: token }));
    await clients.ssm.send(
      new PutParameterCommand({ Name: parameterName, Value: apiKey, Type: "SecureString" }),
    );
    const endpoints = inject("awsEndpoints");
    runtime = await startRuntime(EMULATOR, {
      endpoint: { ...endpoints, secretsmanager: endpoint, ssm: endpoint },
    });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
    if (!clients) return;
    await clients.secretsManager
      .send(new DeleteSecretCommand({ SecretId: secretName, ForceDeleteWithoutRecovery: true }))
      .catch(() => {});
    await clients.ssm.send(new DeleteParameterCommand({ Name: parameterName })).catch(() => {});
    clients.destroy();
  });

  it("sends the values read at run time, and keeps and answers only the references", async () => {
    received.length = 0;
    const definition = workflow(uniqueName("secrets-aws"), secretName, `ssm:${parameterName}`);
    const { view, texts } = await runAndCollect(runtime, api, definition);
    expect(view.status).toBe("SUCCEEDED");
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ authorization: token, "x-api-key": apiKey, "x-trace": "plain" });
    // The output holds the response's headers, never the request's.
    expect(view.nodes[0]?.output).toMatchObject({ status: 200, headers: { "x-served-by": "test" } });

    for (const [what, text] of Object.entries(texts)) {
      expect(text, what).not.toContain(token);
      expect(text, what).not.toContain(apiKey);
    }
    for (const what of ["storedDefinition", "getWorkflow"] as const) {
      expect(texts[what], what).toContain(`{"secret":"${secretName}"}`);
      expect(texts[what], what).toContain(`{"secret":"ssm:${parameterName}"}`);
    }
  });

  it("fails the node at once, naming the secret, when it does not exist", async () => {
    received.length = 0;
    const definition = workflow(uniqueName("secrets-missing"), uniqueName("weft-test/absent"), "ssm:/absent");
    const registered = await api.call("POST", "/workflows", definition);
    expect(registered.status).toBe(201);
    const started = await api.call("POST", "/executions", { workflow: definition.name });
    const view = await api.waitForEnd(started.body.executionId);
    expect(view.status).toBe("FAILED");
    expect(view.nodes[0]).toMatchObject({ status: "FAILED", attempt: 1, error: { name: "SecretNotFound" } });
    expect(view.nodes[0]?.error?.message).toContain("was not found (looked in AWS Secrets Manager");
    expect(received).toHaveLength(0);
  });

  it("refuses plain-text credentials at registration, and redacts a stored definition that has them", async () => {
    const name = uniqueName("secrets-plain");
    const plain = {
      name,
      nodes: [
        {
          id: "call",
          type: "http",
          params: { method: "GET", url: `${baseUrl}/`, headers: { Authorization: "Bearer plain-old-token" } },
        },
      ],
    };
    const refused = await api.call("POST", "/workflows", plain);
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("InvalidDefinition");
    expect(refused.body.error.details).toEqual([
      expect.objectContaining({
        path: "nodes[0].params.headers.Authorization",
        message: expect.stringContaining(
          'node "call", params.headers.Authorization (task type "http"): header "Authorization" holds a plain-text credential; refer to a secret instead',
        ),
      }),
    ]);

    // As a definition registered before the rule: written through the store directly.
    await runtime.ports.store.putWorkflowVersion({
      name,
      version: 1,
      definitionHash: definitionHash(plain as never),
      definition: plain as never,
      createdAt: Date.now(),
    });
    const read = await api.call("GET", `/workflows/${name}`);
    expect(read.status).toBe(200);
    expect(read.body.definition.nodes[0].params.headers).toEqual({ Authorization: "***" });
    expect(JSON.stringify(read.body)).not.toContain("plain-old-token");
  });
});

describe("secret references in npm start's memory mode (weft.config.json secrets)", () => {
  let dir = "";
  let runtime: LocalRuntime;
  let api: ApiClient;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "weft-secrets-"));
    const file = path.join(dir, "weft.config.json");
    await writeFile(
      file,
      JSON.stringify({ secrets: { "local/token": "Bearer local-s3cr3t", "ssm:/local/key": "local-key-1" } }),
    );
    runtime = await startRuntime("memory", {
      taskOptions: localTaskOptions(await loadLocalConfig(file), {}),
    });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("resolves references from the config file, and keeps only the references", async () => {
    received.length = 0;
    const { view, texts } = await runAndCollect(
      runtime,
      api,
      workflow("secrets-local", "local/token", "ssm:/local/key"),
    );
    expect(view.status).toBe("SUCCEEDED");
    expect(received[0]).toMatchObject({ authorization: "Bearer local-s3cr3t", "x-api-key": "local-key-1" });
    for (const [what, text] of Object.entries(texts)) {
      expect(text, what).not.toContain("local-s3cr3t");
      expect(text, what).not.toContain("local-key-1");
    }
  });
});
