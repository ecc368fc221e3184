/**
 * A call IAM denies is terminal, and says which grant is missing: the `lambda`, `emit` and `http`
 * (secret reference) task types run with the real AWS SDK clients (built by createAwsClients)
 * against a loopback server that answers each call exactly as the service answers a denied one on
 * the wire — Lambda (rest-json): 403 with `x-amzn-ErrorType: AccessDeniedException` and
 * `{"Message": …}`; EventBridge, Secrets Manager and SSM (JSON 1.1): 400 with
 * `{"__type": "AccessDeniedException", "message": …}` — so the SDK's own deserializer makes the
 * error. The node must fail after one attempt, naming the action, the resource and the CDK context
 * key. (No emulator here enforces IAM; the deployment rehearsal in rehearsal/ does, for real.)
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { httpEgressPolicy } from "../../shared/config/egress.js";
import { type AwsClients, createAwsClients } from "../../shared/config/wiring.js";
import { emitTask } from "../../shared/tasks/emit.js";
import { EventBridgeSender } from "../../shared/tasks/emit-eventbridge.js";
import { httpTask } from "../../shared/tasks/http.js";
import { lambdaTask } from "../../shared/tasks/lambda.js";
import { AwsLambdaInvoker } from "../../shared/tasks/lambda-aws.js";
import { AwsSecretStore } from "../../shared/tasks/secrets-aws.js";
import { type Backend, createBackend } from "../support/backends.js";
import { fastRetry, runWorkflow } from "./helpers.js";

const ROLE = "arn:aws:sts::123456789012:assumed-role/Weft-WorkerFunctionServiceRole/Weft-WorkerFunction";
const denial = (action: string, resource: string) =>
  `User: ${ROLE} is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`;

const FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:score-lead";
const BUS_ARN = "arn:aws:events:us-east-1:123456789012:event-bus/orders";
const PARAMETER_ARN = "arn:aws:ssm:us-east-1:123456789012:parameter/weft/api-token";

interface Call {
  method: string;
  path: string;
  target: string | undefined;
}

let server: Server;
let endpoint = "";
const calls: Call[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const target = req.headers["x-amz-target"] as string | undefined;
      calls.push({ method: req.method ?? "", path: req.url ?? "", target });
      const requestId = "5e2f1d4a-1111-2222-3333-444455556666";
      if (req.url?.startsWith("/2015-03-31/functions/")) {
        // Lambda's answer to an Invoke the caller's role may not make.
        res.writeHead(403, {
          "content-type": "application/json",
          "x-amzn-errortype": "AccessDeniedException",
          "x-amzn-requestid": requestId,
        });
        res.end(JSON.stringify({ Message: denial("lambda:InvokeFunction", FUNCTION_ARN) }));
        return;
      }
      const [action, resource] =
        target === "AWSEvents.PutEvents"
          ? ["events:PutEvents", BUS_ARN]
          : target === "secretsmanager.GetSecretValue"
            ? ["secretsmanager:GetSecretValue", "prod/api-token"]
            : target === "AmazonSSM.GetParameter"
              ? ["ssm:GetParameter", PARAMETER_ARN]
              : [undefined, undefined];
      if (action === undefined) {
        res.writeHead(400, { "content-type": "application/x-amz-json-1.1" });
        res.end(JSON.stringify({ __type: "UnknownOperationException" }));
        return;
      }
      // The JSON 1.1 services' answer to a denied call.
      res.writeHead(400, { "content-type": "application/x-amz-json-1.1", "x-amzn-requestid": requestId });
      res.end(JSON.stringify({ __type: "AccessDeniedException", message: denial(action, resource ?? "") }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

let clients: AwsClients | undefined;
let backend: Backend | undefined;
afterEach(async () => {
  await backend?.cleanup();
  clients?.destroy();
  backend = undefined;
  clients = undefined;
  calls.length = 0;
});

/** The engine (in memory) with the three task types on real SDK clients pointed at the server. */
async function engine(): Promise<Backend> {
  clients = createAwsClients({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "example" },
    maxAttempts: 3,
  });
  backend = await createBackend("memory", {
    tasks: [
      lambdaTask(new AwsLambdaInvoker(clients.lambda)),
      emitTask(new EventBridgeSender(clients.eventBridge), "weft-lifecycle"),
      httpTask({
        egress: httpEgressPolicy(undefined, "local"),
        secrets: new AwsSecretStore(clients.secretsManager, clients.ssm),
      }),
    ],
  });
  return backend;
}

async function failedNode(params: { type: string; params: Record<string, unknown> }) {
  const run = await runWorkflow(await engine(), {
    name: `denied-${params.type}`,
    nodes: [{ id: "call", ...params, retry: { ...fastRetry, maxAttempts: 3 } }],
  });
  expect(run.view.status).toBe("FAILED");
  const node = run.node("call");
  expect(node).toMatchObject({
    status: "FAILED",
    attempt: 1,
    error: { name: "AccessDenied", retryable: false },
  });
  return node.error?.message ?? "";
}

describe("AccessDenied is terminal and names the missing grant", () => {
  it("lambda: lambda:InvokeFunction on the function, weft:invokableFunctionArns", async () => {
    const message = await failedNode({ type: "lambda", params: { functionName: "score-lead" } });
    expect(message).toContain("invoking score-lead was denied (AccessDeniedException)");
    expect(message).toContain(`the worker's role needs lambda:InvokeFunction on ${FUNCTION_ARN}`);
    expect(message).toContain("CDK context key weft:invokableFunctionArns");
    // One attempt, one call: neither the engine nor the SDK retried it.
    expect(calls.map((c) => [c.method, c.path])).toEqual([
      ["POST", "/2015-03-31/functions/score-lead/invocations"],
    ]);
  });

  it("emit: events:PutEvents on the bus, weft:extraEventBusArns", async () => {
    const message = await failedNode({
      type: "emit",
      params: { detailType: "Order Shipped", eventBusName: "orders" },
    });
    expect(message).toContain("putting an event on bus orders was denied (AccessDeniedException)");
    expect(message).toContain(`needs events:PutEvents on ${BUS_ARN}`);
    expect(message).toContain("CDK context key weft:extraEventBusArns");
    expect(calls.map((c) => c.target)).toEqual(["AWSEvents.PutEvents"]);
  });

  it("a secret read: secretsmanager:GetSecretValue or ssm:GetParameter, weft:secretArns", async () => {
    const secretsManager = await failedNode({
      type: "http",
      params: {
        method: "GET",
        url: `${endpoint}/never-called`,
        headers: { Authorization: { secret: "prod/api-token" } },
      },
    });
    expect(secretsManager).toContain('reading secret "prod/api-token" was denied (AccessDeniedException)');
    expect(secretsManager).toContain("needs secretsmanager:GetSecretValue on prod/api-token");
    expect(secretsManager).toContain("CDK context key weft:secretArns");
    expect(calls.map((c) => c.target)).toEqual(["secretsmanager.GetSecretValue"]);

    await backend?.cleanup();
    clients?.destroy();
    calls.length = 0;
    const parameter = await failedNode({
      type: "http",
      params: {
        method: "GET",
        url: `${endpoint}/never-called`,
        headers: { "X-Api-Key": { secret: "ssm:/weft/api-token" } },
      },
    });
    expect(parameter).toContain(`needs ssm:GetParameter on ${PARAMETER_ARN}`);
    expect(parameter).toContain("CDK context key weft:secretArns");
    expect(calls.map((c) => c.target)).toEqual(["AmazonSSM.GetParameter"]);
  });
});
