import { type RemovalPolicy, Token } from "aws-cdk-lib";
import { AccessLogFormat } from "aws-cdk-lib/aws-apigateway";
import * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import { HttpIamAuthorizer, HttpJwtAuthorizer } from "aws-cdk-lib/aws-apigatewayv2-authorizers";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { API_ROUTES, ROUTE_NAMES } from "../../shared/http/contract.js";

/** How the HTTP API authenticates callers: AWS IAM (SigV4) by default, or JWT bearer tokens. */
export type WeftApiAuthorization =
  | { readonly kind: "iam" }
  | { readonly kind: "jwt"; readonly issuer: string; readonly audience: readonly string[] };

/**
 * The API Gateway routes: every route of the contract (shared/http/contract.ts), which is also the
 * api function's route table, so a route served locally is never a 404 once deployed.
 */
export const WEFT_API_ROUTES: ReadonlyArray<{ method: apigwv2.HttpMethod; path: string }> = ROUTE_NAMES.map(
  (name) => ({ method: apigwv2.HttpMethod[API_ROUTES[name].method], path: API_ROUTES[name].path }),
);

export interface WeftHttpApiProps {
  readonly handler: lambda.IFunction;
  readonly authorization: WeftApiAuthorization;
  readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
  readonly logRetention: logs.RetentionDays;
  readonly logRemovalPolicy: RemovalPolicy;
}

/** HTTP API with every contract route authorized (IAM or JWT) and JSON access logs. */
export class WeftHttpApi extends Construct {
  readonly httpApi: apigwv2.HttpApi;
  readonly accessLogs: logs.LogGroup;
  readonly routes: apigwv2.HttpRoute[];

  constructor(scope: Construct, id: string, props: WeftHttpApiProps) {
    super(scope, id);

    const authorizer = makeAuthorizer(props.authorization);
    this.accessLogs = new logs.LogGroup(this, "AccessLogs", {
      retention: props.logRetention,
      removalPolicy: props.logRemovalPolicy,
    });

    this.httpApi = new apigwv2.HttpApi(this, "HttpApi", {
      description: "weft orchestrator API",
      // Every route, including any added later, needs an authorized caller.
      defaultAuthorizer: authorizer,
      createDefaultStage: false,
    });
    new apigwv2.HttpStage(this, "DefaultStage", {
      httpApi: this.httpApi,
      stageName: "$default",
      autoDeploy: true,
      throttle: { rateLimit: props.throttle.rateLimit, burstLimit: props.throttle.burstLimit },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: "$context.requestId",
            time: "$context.requestTime",
            ip: "$context.identity.sourceIp",
            caller: "$context.identity.caller",
            method: "$context.httpMethod",
            routeKey: "$context.routeKey",
            path: "$context.path",
            status: "$context.status",
            protocol: "$context.protocol",
            responseLength: "$context.responseLength",
            latencyMs: "$context.responseLatency",
            integrationLatencyMs: "$context.integrationLatency",
            integrationError: "$context.integrationErrorMessage",
            authorizerError: "$context.authorizer.error",
          }),
        ),
      },
    });

    const integration = new HttpLambdaIntegration("ApiIntegration", props.handler, {
      payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
    });
    this.routes = WEFT_API_ROUTES.flatMap((route) =>
      this.httpApi.addRoutes({ path: route.path, methods: [route.method], integration, authorizer }),
    );
  }

  /** Base URL of the `$default` stage, ending in `/`. */
  get url(): string {
    return `${this.httpApi.apiEndpoint}/`;
  }
}

function makeAuthorizer(authorization: WeftApiAuthorization): apigwv2.IHttpRouteAuthorizer {
  switch (authorization.kind) {
    case "iam":
      return new HttpIamAuthorizer();
    case "jwt": {
      if (authorization.audience.length === 0) {
        throw new Error("weft: a JWT authorizer needs at least one audience");
      }
      if (!Token.isUnresolved(authorization.issuer) && !authorization.issuer.startsWith("https://")) {
        throw new Error(`weft: the JWT issuer must be an https:// URL, got ${authorization.issuer}`);
      }
      return new HttpJwtAuthorizer("JwtAuthorizer", authorization.issuer, {
        jwtAudience: [...authorization.audience],
      });
    }
  }
}
