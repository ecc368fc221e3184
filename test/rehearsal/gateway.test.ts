/** API Gateway HTTP API emulation: route selection, the 2.0 event, and the result mapping. */
import { describe, expect, it } from "vitest";
import { fromResultV2, isTextContent, toEventV2 } from "../../rehearsal/sources/api-event.js";
import { type ApiRoute, apiRoutes, selectRoute } from "../../rehearsal/sources/routes.js";

const route = (routeKey: string): ApiRoute => {
  const [method = "", path = ""] = routeKey === "$default" ? ["ANY", "$default"] : routeKey.split(" ");
  return {
    routeKey,
    method,
    segments: path === "$default" ? ["$default"] : path.split("/").filter(Boolean),
    authorizationType: "AWS_IAM",
    functionLogicalId: "Fn",
    payloadFormatVersion: "2.0",
    timeoutMs: 30_000,
  };
};

describe("selectRoute", () => {
  const routes = [
    "GET /executions",
    "GET /executions/{id}",
    "POST /executions/{id}/trigger",
    "GET /executions/latest",
    "ANY /files/{proxy+}",
  ].map(route);

  it("matches method and path, with path parameters (decoded)", () => {
    expect(selectRoute(routes, "GET", "/executions/ab%20c")).toEqual({
      route: routes[1],
      pathParameters: { id: "ab c" },
    });
    expect(selectRoute(routes, "POST", "/executions/x/trigger")?.route.routeKey).toBe(
      "POST /executions/{id}/trigger",
    );
  });

  it("prefers literal segments to parameters, and takes a greedy path last", () => {
    expect(selectRoute(routes, "GET", "/executions/latest")?.route.routeKey).toBe("GET /executions/latest");
    expect(selectRoute(routes, "DELETE", "/files/a/b/c")).toEqual({
      route: routes[4],
      pathParameters: { proxy: "a/b/c" },
    });
  });

  it("answers nothing (API Gateway's 404) outside the routes, and falls back on $default", () => {
    expect(selectRoute(routes, "DELETE", "/executions")).toBeUndefined();
    expect(selectRoute(routes, "GET", "/executions/x/y")).toBeUndefined();
    expect(selectRoute([...routes, route("$default")], "GET", "/nowhere")?.route.routeKey).toBe("$default");
  });
});

describe("apiRoutes", () => {
  it("reads route keys and follows each route's integration to its function", () => {
    const template = {
      Resources: {
        Fn: { Type: "AWS::Lambda::Function" },
        Integration: {
          Type: "AWS::ApiGatewayV2::Integration",
          Properties: {
            IntegrationType: "AWS_PROXY",
            IntegrationUri: { "Fn::GetAtt": ["Fn", "Arn"] },
            PayloadFormatVersion: "2.0",
          },
        },
        Route: {
          Type: "AWS::ApiGatewayV2::Route",
          Properties: {
            RouteKey: "POST /dlq/redrive",
            AuthorizationType: "AWS_IAM",
            Target: { "Fn::Join": ["", ["integrations/", { Ref: "Integration" }]] },
          },
        },
      },
    };
    expect(apiRoutes(template)).toEqual([
      {
        routeKey: "POST /dlq/redrive",
        method: "POST",
        segments: ["dlq", "redrive"],
        authorizationType: "AWS_IAM",
        functionLogicalId: "Fn",
        payloadFormatVersion: "2.0",
        timeoutMs: 30_000,
      },
    ]);
  });
});

describe("the payload format 2.0 event", () => {
  const match = { route: route("GET /executions/{id}"), pathParameters: { id: "e1" } };
  const ctx = {
    apiId: "abc123",
    region: "us-east-1",
    accountId: "123456789012",
    stage: "$default",
    requestId: "r1",
    now: new Date(Date.UTC(2026, 10, 24, 1, 2, 3)),
  };

  it("carries the raw path and query, joined repeated parameters, cookies, and the route", () => {
    const event = toEventV2(
      {
        method: "get",
        url: "/executions/e1?resolve=true&tag=a&tag=b",
        headers: { host: "x", cookie: "a=1; b=2", "user-agent": "test" },
        body: Buffer.alloc(0),
        sourceIp: "127.0.0.1",
      },
      match,
      ctx,
    );
    expect(event).toMatchObject({
      version: "2.0",
      routeKey: "GET /executions/{id}",
      rawPath: "/executions/e1",
      rawQueryString: "resolve=true&tag=a&tag=b",
      cookies: ["a=1", "b=2"],
      headers: { host: "x", "user-agent": "test" },
      queryStringParameters: { resolve: "true", tag: "a,b" },
      pathParameters: { id: "e1" },
      isBase64Encoded: false,
      requestContext: {
        http: {
          method: "GET",
          path: "/executions/e1",
          sourceIp: "127.0.0.1",
          userAgent: "test",
          protocol: "HTTP/1.1",
        },
        stage: "$default",
        time: "24/Nov/2026:01:02:03 +0000",
        timeEpoch: ctx.now.getTime(),
        domainName: "abc123.execute-api.us-east-1.amazonaws.com",
      },
    });
    expect(event.body).toBeUndefined();
    expect(event.headers.cookie).toBeUndefined();
  });

  it("passes JSON bodies as text and anything else base64-encoded", () => {
    const json = toEventV2(
      {
        method: "POST",
        url: "/x",
        headers: { "content-type": "application/json" },
        body: Buffer.from('{"a":1}'),
        sourceIp: "",
      },
      match,
      ctx,
    );
    expect(json).toMatchObject({ body: '{"a":1}', isBase64Encoded: false });
    const binary = toEventV2(
      {
        method: "POST",
        url: "/x",
        headers: { "content-type": "image/png" },
        body: Buffer.from([1, 2]),
        sourceIp: "",
      },
      match,
      ctx,
    );
    expect(binary).toMatchObject({ body: "AQI=", isBase64Encoded: true });
    expect(isTextContent("application/vnd.api+json; charset=utf-8")).toBe(true);
    expect(isTextContent(undefined)).toBe(false);
  });
});

describe("the 2.0 result", () => {
  it("takes a structured result as it says, base64 bodies decoded", () => {
    expect(
      fromResultV2({ statusCode: 201, headers: { "Content-Type": "application/json" }, body: '{"ok":true}' }),
    ).toEqual({
      status: 201,
      headers: { "content-type": "application/json" },
      cookies: [],
      body: Buffer.from('{"ok":true}'),
    });
    expect(
      fromResultV2({ statusCode: 200, body: "AQI=", isBase64Encoded: true, cookies: ["a=1"] }),
    ).toMatchObject({
      body: Buffer.from([1, 2]),
      cookies: ["a=1"],
    });
  });

  it("infers a 200 JSON answer from anything else", () => {
    expect(fromResultV2({ hello: "world" })).toEqual({
      status: 200,
      headers: { "content-type": "application/json" },
      cookies: [],
      body: Buffer.from('{"hello":"world"}'),
    });
  });
});
