/** The local HTTP server: API Gateway v2 events built from real requests, and results written back. */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import {
  formatRequestTime,
  type RunningHttpServer,
  startHttpServer,
  toApiGatewayEvent,
} from "../../local/http-server.js";

let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(
  respond: (
    event: APIGatewayProxyEventV2,
  ) => APIGatewayProxyStructuredResultV2 | Promise<APIGatewayProxyStructuredResultV2>,
) {
  const events: APIGatewayProxyEventV2[] = [];
  const errors: unknown[] = [];
  server = await startHttpServer({
    port: 0,
    handler: async (event) => {
      events.push(event);
      return respond(event);
    },
    onError: (error) => errors.push(error),
  });
  return { events, errors, url: server.url };
}

describe("local http server → API Gateway v2 events", () => {
  it("listens on 127.0.0.1 on a free port when asked for port 0", async () => {
    const { url } = await serve(() => ({ statusCode: 204 }));
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server?.port).toBeGreaterThan(0);
  });

  it("builds a payload 2.0 $default event from a request", async () => {
    const { events, url } = await serve(() => ({ statusCode: 200, body: "{}" }));
    const before = Date.now();
    await fetch(`${url}/executions/ex%201/trigger?a=1&b=two&a=3`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Custom": "Yes", Cookie: "s=1; t=2" },
      body: JSON.stringify({ input: { héllo: "wörld" } }),
    });
    expect(events).toHaveLength(1);
    const event = events[0]!;
    expect(event).toMatchObject({
      version: "2.0",
      routeKey: "$default",
      rawPath: "/executions/ex%201/trigger",
      rawQueryString: "a=1&b=two&a=3",
      queryStringParameters: { a: "1,3", b: "two" },
      cookies: ["s=1", "t=2"],
      isBase64Encoded: false,
      body: JSON.stringify({ input: { héllo: "wörld" } }),
    });
    expect(event.pathParameters).toBeUndefined();
    expect(event.headers["content-type"]).toBe("application/json");
    expect(event.headers["x-custom"]).toBe("Yes");
    expect(event.headers.cookie).toBeUndefined();
    expect(Object.keys(event.headers).every((name) => name === name.toLowerCase())).toBe(true);
    expect(event.requestContext).toMatchObject({
      routeKey: "$default",
      stage: "$default",
      http: {
        method: "POST",
        path: "/executions/ex%201/trigger",
        protocol: "HTTP/1.1",
        sourceIp: expect.stringMatching(/127\.0\.0\.1/),
        userAgent: expect.any(String),
      },
      requestId: expect.any(String),
      time: expect.stringMatching(/^\d\d\/[A-Z][a-z]{2}\/\d{4}:\d\d:\d\d:\d\d \+0000$/),
    });
    expect(event.requestContext.timeEpoch).toBeGreaterThanOrEqual(before);
  });

  it("leaves body and queryStringParameters out when the request has none", async () => {
    const { events, url } = await serve(() => ({ statusCode: 200 }));
    await fetch(`${url}/workflows/x`);
    const event = events[0]!;
    expect(event.body).toBeUndefined();
    expect(event.queryStringParameters).toBeUndefined();
    expect(event.rawQueryString).toBe("");
    expect(event.requestContext.http.method).toBe("GET");
  });

  it("writes back status, headers and body (decoding base64 results)", async () => {
    const { url } = await serve((event) =>
      event.rawPath === "/b64"
        ? { statusCode: 201, isBase64Encoded: true, body: Buffer.from("binary ok").toString("base64") }
        : { statusCode: 409, headers: { "content-type": "application/json", "x-n": 3 }, body: '{"error":1}' },
    );
    const answer = await fetch(`${url}/anything`);
    expect(answer.status).toBe(409);
    expect(answer.headers.get("content-type")).toBe("application/json");
    expect(answer.headers.get("x-n")).toBe("3");
    expect(await answer.text()).toBe('{"error":1}');
    const b64 = await fetch(`${url}/b64`);
    expect(b64.status).toBe(201);
    expect(await b64.text()).toBe("binary ok");
  });

  it("answers 500 as API Gateway does when the handler throws", async () => {
    const { url, errors } = await serve(() => {
      throw new Error("handler crashed");
    });
    const answer = await fetch(url);
    expect(answer.status).toBe(500);
    expect(await answer.json()).toEqual({ message: "Internal Server Error" });
    expect(errors).toHaveLength(1);
  });

  it("serves several requests at once", async () => {
    const { events, url } = await serve(async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return { statusCode: 200, body: "ok" };
    });
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => fetch(`${url}/r/${i}`)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(events).toHaveLength(5);
  });
});

describe("toApiGatewayEvent", () => {
  it("joins repeated headers with commas and formats the request time", () => {
    const event = toApiGatewayEvent({
      method: "get",
      url: "/x",
      headers: { "x-many": ["a", "b"], host: "localhost:3000" },
      sourceIp: "::1",
      now: Date.UTC(2020, 2, 12, 19, 3, 58),
    });
    expect(event.headers["x-many"]).toBe("a,b");
    expect(event.requestContext.http.method).toBe("GET");
    expect(event.requestContext.domainName).toBe("localhost:3000");
    expect(event.requestContext.time).toBe("12/Mar/2020:19:03:58 +0000");
    expect(formatRequestTime(0)).toBe("01/Jan/1970:00:00:00 +0000");
  });
});
