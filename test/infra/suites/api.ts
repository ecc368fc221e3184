import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { apiRoutes } from "../../../functions/api/app.js";
import { WEFT_API_ROUTES } from "../../../infra/lib/api.js";
import type { Engine } from "../../../shared/engine/engine.js";
import { baseSynth, type CfnResource, resource, resourcesOfType, synthWeft } from "../fixture.js";

export function apiSuite(): void {
  const CONTRACT_ROUTES = [
    "POST /workflows",
    "GET /workflows",
    "GET /workflows/{name}",
    "POST /payloads",
    "POST /executions",
    "GET /executions",
    "GET /executions/{id}",
    "POST /executions/{id}/trigger",
    "POST /executions/{id}/cancel",
    "GET /executions/{id}/events",
    "GET /dlq",
    "POST /dlq/redrive",
    "POST /workers",
    "GET /workers",
    "POST /workers/{id}/heartbeat",
    "DELETE /workers/{id}",
    "POST /workers/{id}/poll",
    "POST /tasks/heartbeat",
    "POST /tasks/complete",
    "POST /tasks/fail",
    "POST /callbacks/complete",
    "POST /callbacks/fail",
    "POST /callbacks/heartbeat",
  ].sort();

  const iam = baseSynth();
  const jwt = synthWeft(
    {
      weft: {
        authorization: {
          kind: "jwt",
          issuer: "https://auth.example.test/",
          audience: ["weft-api", "weft-cli"],
        },
      },
    },
    "WeftJwt",
  );

  const routes = (synth: typeof iam): Array<[string, CfnResource]> =>
    resourcesOfType(synth.json, "AWS::ApiGatewayV2::Route");
  const routeKeys = (synth: typeof iam) =>
    routes(synth)
      .map(([, r]) => r.Properties?.RouteKey as string)
      .sort();

  describe("HTTP API with IAM authorization (default)", () => {
    it("is one HTTP API", () => {
      iam.template.resourceCountIs("AWS::ApiGatewayV2::Api", 1);
      iam.template.hasResourceProperties("AWS::ApiGatewayV2::Api", { ProtocolType: "HTTP" });
    });

    it("routes exactly the contract's paths", () => {
      expect(routeKeys(iam)).toEqual(CONTRACT_ROUTES);
    });

    it("routes every route the api function serves (one left out would be API Gateway's 404)", () => {
      // The route table createApiHandler (functions/api/app.ts) builds its router from; building
      // them calls nothing on the engine.
      const engine = {} as Engine;
      const served = apiRoutes(engine, { resolveByDefault: false, maxInlineBytes: 0 }).map(
        (route) => `${route.method.toUpperCase()} ${route.pattern}`,
      );
      expect(served).toContain("POST /payloads");
      expect(WEFT_API_ROUTES.map((route) => `${route.method} ${route.path}`).sort()).toEqual(served.sort());
      expect(routeKeys(iam)).toEqual(served.sort());
    });

    it("requires AWS_IAM on every route (none is open)", () => {
      for (const [, route] of routes(iam)) {
        expect(route.Properties?.AuthorizationType, String(route.Properties?.RouteKey)).toBe("AWS_IAM");
      }
      expect(routes(iam).some(([, r]) => r.Properties?.AuthorizationType === "NONE")).toBe(false);
    });

    it("sends every route to the api function through one Lambda proxy integration (payload 2.0)", () => {
      const integrations = resourcesOfType(iam.json, "AWS::ApiGatewayV2::Integration");
      expect(integrations).toHaveLength(1);
      const [integrationId, integration] = integrations[0]!;
      expect(integration.Properties).toMatchObject({
        IntegrationType: "AWS_PROXY",
        PayloadFormatVersion: "2.0",
        IntegrationUri: { "Fn::GetAtt": [iam.functionId("api"), "Arn"] },
      });
      for (const [, route] of routes(iam)) {
        expect(route.Properties?.Target).toEqual({
          "Fn::Join": ["", ["integrations/", { Ref: integrationId }]],
        });
      }
    });

    it("lets API Gateway invoke only the api function", () => {
      const permissions = resourcesOfType(iam.json, "AWS::Lambda::Permission").filter(
        ([, p]) => p.Properties?.Principal === "apigateway.amazonaws.com",
      );
      expect(permissions.length).toBeGreaterThan(0);
      for (const [, permission] of permissions) {
        expect(permission.Properties?.FunctionName).toEqual({ "Fn::GetAtt": [iam.functionId("api"), "Arn"] });
      }
    });

    it("serves a $default stage with JSON access logs and throttling", () => {
      const logGroupId = iam.logicalId(iam.stack.weft.apiAccessLogs);
      iam.template.hasResourceProperties("AWS::ApiGatewayV2::Stage", {
        StageName: "$default",
        AutoDeploy: true,
        AccessLogSettings: {
          DestinationArn: { "Fn::GetAtt": [logGroupId, "Arn"] },
          Format: Match.stringLikeRegexp("\\$context\\.requestId"),
        },
        DefaultRouteSettings: { ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 },
      });
      const stage = resourcesOfType(iam.json, "AWS::ApiGatewayV2::Stage")[0]![1];
      const format = (stage.Properties!.AccessLogSettings as { Format: string }).Format;
      expect(JSON.parse(format)).toMatchObject({
        requestId: "$context.requestId",
        status: "$context.status",
      });
      expect(resource(iam.json, logGroupId).Properties?.RetentionInDays).toBe(30);
    });

    it("has no authorizer resource (IAM needs none)", () => {
      iam.template.resourceCountIs("AWS::ApiGatewayV2::Authorizer", 0);
    });
  });

  describe("HTTP API with a JWT authorizer", () => {
    it("creates one JWT authorizer with the issuer and audiences", () => {
      jwt.template.resourceCountIs("AWS::ApiGatewayV2::Authorizer", 1);
      jwt.template.hasResourceProperties("AWS::ApiGatewayV2::Authorizer", {
        AuthorizerType: "JWT",
        IdentitySource: ["$request.header.Authorization"],
        JwtConfiguration: { Issuer: "https://auth.example.test/", Audience: ["weft-api", "weft-cli"] },
      });
    });

    it("protects every route with it", () => {
      const [authorizerId] = resourcesOfType(jwt.json, "AWS::ApiGatewayV2::Authorizer")[0]!;
      expect(routeKeys(jwt)).toEqual(CONTRACT_ROUTES);
      for (const [, route] of routes(jwt)) {
        expect(route.Properties).toMatchObject({
          AuthorizationType: "JWT",
          AuthorizerId: { Ref: authorizerId },
        });
      }
    });

    it("refuses a JWT configuration without audience or with a non-https issuer", () => {
      expect(() =>
        synthWeft(
          { weft: { authorization: { kind: "jwt", issuer: "https://a.test/", audience: [] } } },
          "NoAud",
        ),
      ).toThrow(/audience/);
      expect(() =>
        synthWeft(
          { weft: { authorization: { kind: "jwt", issuer: "http://a.test/", audience: ["x"] } } },
          "Http",
        ),
      ).toThrow(/https/);
    });
  });
}
