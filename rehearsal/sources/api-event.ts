/**
 * API Gateway HTTP API, payload format 2.0: the event it hands a Lambda integration for a request,
 * and how it turns the function's result into the HTTP response.
 */
import type { APIGatewayProxyEventV2WithIAMAuthorizer, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { RouteMatch } from "./routes.js";

export interface IncomingHttp {
  method: string;
  /** Path and query as on the request line. */
  url: string;
  /** Node's lower-cased headers (cookies and set-cookie arrive as they are). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: Buffer;
  sourceIp: string;
}

export interface ApiContext {
  apiId: string;
  region: string;
  accountId: string;
  stage: string;
  requestId: string;
  now: Date;
  /** The IAM caller that signed the request, on AWS_IAM routes. */
  caller?: { accessKey: string; accountId: string; userArn: string; userId: string };
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** `12/Mar/2020:19:03:58 +0000`, API Gateway's requestContext.time. */
export function apiGatewayTime(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return (
    `${pad(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:` +
    `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`
  );
}

/** Bodies API Gateway passes as text; anything else is base64-encoded. */
export function isTextContent(contentType: string | undefined): boolean {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  return (
    type.startsWith("text/") ||
    /^application\/([\w.+-]+\+)?(json|xml)$/.test(type) ||
    type === "application/javascript" ||
    type === "application/x-www-form-urlencoded"
  );
}

export function toEventV2(
  req: IncomingHttp,
  match: RouteMatch,
  ctx: ApiContext,
): APIGatewayProxyEventV2WithIAMAuthorizer {
  const [rawPath = "/", rawQueryString = ""] = req.url.split(/\?(.*)/s, 2);
  const headers: Record<string, string> = {};
  let cookies: string[] | undefined;
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (name === "cookie") {
      cookies = (Array.isArray(value) ? value.join("; ") : value).split(/;\s*/).filter(Boolean);
      continue;
    }
    headers[name] = Array.isArray(value) ? value.join(",") : value;
  }
  const query: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(rawQueryString))
    query[key] = key in query ? `${query[key]},${value}` : value;
  const text = isTextContent(headers["content-type"]);
  const event: APIGatewayProxyEventV2WithIAMAuthorizer = {
    version: "2.0",
    routeKey: match.route.routeKey,
    rawPath,
    rawQueryString,
    ...(cookies ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: ctx.accountId,
      apiId: ctx.apiId,
      domainName: `${ctx.apiId}.execute-api.${ctx.region}.amazonaws.com`,
      domainPrefix: ctx.apiId,
      http: {
        method: req.method.toUpperCase(),
        path: rawPath,
        protocol: "HTTP/1.1",
        sourceIp: req.sourceIp,
        userAgent: headers["user-agent"] ?? "",
      },
      requestId: ctx.requestId,
      routeKey: match.route.routeKey,
      stage: ctx.stage,
      time: apiGatewayTime(ctx.now),
      timeEpoch: ctx.now.getTime(),
      authorizer: {
        iam: {
          accessKey: ctx.caller?.accessKey ?? "",
          accountId: ctx.caller?.accountId ?? "",
          callerId: ctx.caller?.userId ?? "",
          cognitoIdentity: null as never,
          principalOrgId: null as never,
          userArn: ctx.caller?.userArn ?? "",
          userId: ctx.caller?.userId ?? "",
        },
      },
    },
    ...(Object.keys(match.pathParameters).length > 0 ? { pathParameters: match.pathParameters } : {}),
    ...(req.body.length > 0 ? { body: text ? req.body.toString("utf8") : req.body.toString("base64") } : {}),
    isBase64Encoded: req.body.length > 0 && !text,
    stageVariables: undefined,
  };
  if (event.stageVariables === undefined) delete event.stageVariables;
  return event;
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  cookies: string[];
  body: Buffer;
}

/**
 * A 2.0 result: a structured one (with statusCode) as it says; anything else is a 200 JSON body,
 * as API Gateway infers it.
 */
export function fromResultV2(result: unknown): HttpAnswer {
  if (result !== null && typeof result === "object" && "statusCode" in result) {
    const structured = result as APIGatewayProxyStructuredResultV2;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(structured.headers ?? {}))
      headers[name.toLowerCase()] = String(value);
    const body = structured.body ?? "";
    return {
      status: Number(structured.statusCode),
      headers,
      cookies: structured.cookies ?? [],
      body: structured.isBase64Encoded ? Buffer.from(body, "base64") : Buffer.from(body, "utf8"),
    };
  }
  const body = typeof result === "string" ? result : JSON.stringify(result);
  return {
    status: 200,
    headers: { "content-type": "application/json" },
    cookies: [],
    body: Buffer.from(body ?? "", "utf8"),
  };
}
