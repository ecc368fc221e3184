/**
 * Exact numbers at the task edges: the `http` task writes them in a JSON body as digits and reads
 * them from a JSON response; the `lambda` task does the same with its event and the function's
 * answer (the AWS invoker, and the local stand-in that plays Lambda's JSON boundary).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { LambdaClient } from "@aws-sdk/client-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpEgressPolicy } from "../../shared/config/egress.js";
import { isExactNumber, LosslessNumber } from "../../shared/domain/exact-numbers.js";
import { httpTask } from "../../shared/tasks/http.js";
import { AwsLambdaInvoker } from "../../shared/tasks/lambda-aws.js";
import { callAsLambda } from "../../shared/tasks/lambda-stand-in.js";
import type { TaskContext } from "../../shared/tasks/task-type.js";

const BIG = "12345678901234567891";
const DECIMAL = "0.1000000000000000000000000001";
const EVENT = { id: new LosslessNumber(BIG), dec: new LosslessNumber(DECIMAL), small: 1 };
const EVENT_TEXT = `{"id":${BIG},"dec":${DECIMAL},"small":1}`;

const context = (): TaskContext => ({
  executionId: "e",
  nodeId: "n",
  attempt: 1,
  idempotencyKey: "e:n:1",
  signal: new AbortController().signal,
  deadline: Date.now() + 60_000,
  sleep: async () => {},
  now: () => Date.now(),
});

describe("the http task", () => {
  let server: Server;
  let baseUrl: string;
  const bodies: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        bodies.push(body);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(`{"echo":${body},"next":${BIG}}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("sends exact numbers as their digits and reads them back from a JSON response", async () => {
    const output = (await httpTask({ egress: httpEgressPolicy(undefined, "local") }).run({
      input: null,
      params: { method: "POST", url: `${baseUrl}/echo`, body: EVENT },
      deps: {},
      context: context(),
    })) as { body: { echo: Record<string, unknown>; next: unknown } };
    expect(bodies[0]).toBe(EVENT_TEXT);
    expect(isExactNumber(output.body.next)).toBe(true);
    expect((output.body.next as LosslessNumber).value).toBe(BIG);
    expect((output.body.echo.dec as LosslessNumber).value).toBe(DECIMAL);
    expect(output.body.echo.small).toBe(1);
  });
});

describe("the lambda task's invokers", () => {
  it("AwsLambdaInvoker writes the event's digits and reads the answer's", async () => {
    const sent: string[] = [];
    const client = {
      send: async (command: { input: { Payload: Uint8Array } }) => {
        sent.push(new TextDecoder().decode(command.input.Payload));
        return { StatusCode: 200, Payload: new TextEncoder().encode(`{"id":${BIG}}`) };
      },
    } as unknown as LambdaClient;
    const result = await new AwsLambdaInvoker(client).invoke(
      "f",
      undefined,
      EVENT,
      new AbortController().signal,
    );
    expect(sent[0]).toBe(EVENT_TEXT);
    const id = (result.payload as { id: unknown }).id;
    expect(isExactNumber(id) && id.value).toBe(BIG);
  });

  it("the local stand-in hands the handler LosslessNumbers and keeps those it returns", async () => {
    let seen: unknown;
    const result = await callAsLambda(
      (event) => {
        seen = event;
        return { got: (event as { id: unknown }).id, made: new LosslessNumber(DECIMAL) };
      },
      EVENT,
      new AbortController().signal,
    );
    expect(isExactNumber((seen as { id: unknown }).id)).toBe(true);
    expect((seen as { small: unknown }).small).toBe(1);
    const payload = result.payload as { got: LosslessNumber; made: LosslessNumber };
    expect([payload.got.value, payload.made.value]).toEqual([BIG, DECIMAL]);
  });
});
