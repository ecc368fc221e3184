/**
 * The HTTP API as API Gateway serves it, on a loopback port: the template's routes only (anything
 * else is its 404), SigV4 checked on AWS_IAM routes (403 otherwise), a payload format 2.0 event per
 * request handed to the integration's function, its result mapped back. Its limits too: a 10 MB
 * request is refused (413), a Lambda invocation over 6 MB or a failed one is a 500, and an
 * integration that takes longer than its timeout (30 s) a 503.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { INVOKE_PAYLOAD_LIMIT } from "../lambda/container.js";
import type { FunctionPool } from "../lambda/pool.js";
import { fromResultV2, toEventV2 } from "./api-event.js";
import { type ApiRoute, selectRoute } from "./routes.js";
import { type Credentials, verifySigV4 } from "./sigv4.js";

const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

export interface HttpApiOptions {
  routes: readonly ApiRoute[];
  /** The function of each integration, by logical id. */
  functions: ReadonlyMap<string, FunctionPool>;
  apiId: string;
  region: string;
  accountId: string;
  /** Who may call: the credentials the rehearsal's client signs with. */
  caller: Credentials & { userArn: string };
}

export interface HttpApi {
  url: string;
  readonly statuses: ReadonlyMap<number, number>;
  stop(): Promise<void>;
}

function send(res: ServerResponse, status: number, message: string, requestId: string): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "apigw-requestid": requestId,
  });
  res.end(body);
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on("end", () => resolve(tooLarge ? undefined : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

export async function startHttpApi(options: HttpApiOptions): Promise<HttpApi> {
  const statuses = new Map<number, number>();
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const requestId = randomUUID();
    const body = await readBody(req);
    if (body === undefined) {
      count(413);
      return send(res, 413, "Request Entity Too Large", requestId);
    }
    const method = req.method ?? "GET";
    const url = req.url ?? "/";
    const match = selectRoute(options.routes, method, url.split("?")[0] ?? "/");
    if (!match) {
      count(404);
      return send(res, 404, "Not Found", requestId);
    }
    if (match.route.authorizationType === "AWS_IAM") {
      const problem = await verifySigV4(
        { method, url, host: req.headers.host ?? "", headers: req.headers, body },
        options.region,
        options.caller,
      );
      if (problem) {
        count(403);
        return send(res, 403, problem === "Missing Authentication Token" ? "Forbidden" : problem, requestId);
      }
    }
    const fn = options.functions.get(match.route.functionLogicalId);
    if (!fn) throw new Error(`no function ${match.route.functionLogicalId} behind ${match.route.routeKey}`);
    const event = toEventV2(
      { method, url, headers: req.headers, body, sourceIp: req.socket.remoteAddress ?? "127.0.0.1" },
      match,
      {
        apiId: options.apiId,
        region: options.region,
        accountId: options.accountId,
        stage: "$default",
        requestId,
        now: new Date(),
        caller: {
          accessKey: options.caller.accessKeyId,
          accountId: options.accountId,
          userArn: options.caller.userArn,
          userId: options.caller.accessKeyId,
        },
      },
    );
    if (Buffer.byteLength(JSON.stringify(event)) > INVOKE_PAYLOAD_LIMIT) {
      // Lambda refuses the invocation (RequestEntityTooLargeException); API Gateway answers 500.
      count(500);
      return send(res, 500, "Internal Server Error", requestId);
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), match.route.timeoutMs);
    });
    const outcome = await Promise.race([fn.invoke(event), timedOut]);
    clearTimeout(timer);
    if (outcome === "timeout") {
      count(503);
      return send(res, 503, "Service Unavailable", requestId);
    }
    if (!outcome.ok) {
      count(500);
      return send(res, 500, "Internal Server Error", requestId);
    }
    const answer = fromResultV2(outcome.result);
    count(answer.status);
    const headers: Record<string, string | string[]> = {
      ...answer.headers,
      "content-length": String(answer.body.length),
      "apigw-requestid": requestId,
    };
    if (answer.cookies.length > 0) headers["set-cookie"] = answer.cookies;
    res.writeHead(answer.status, headers);
    res.end(answer.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, "Internal Server Error", "rehearsal");
      else res.destroy();
      process.stderr.write(
        `[rehearsal] http api: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    });
  });
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    statuses,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
