/**
 * `weft console`: the web console (console/dist, built when missing) served on 127.0.0.1, with its
 * API calls — the routes of the contract, nothing else — forwarded to the weft API of `--api` and
 * signed with SigV4 from the user's AWS credentials exactly as every other CLI call is (no signing
 * for an API on loopback). Nothing public is deployed: the console runs on the user's machine.
 *
 * The proxy acts with the user's credentials, so it answers only its own pages: a request whose
 * Host is not the console's own address (DNS rebinding) or whose Origin is another site's (a page
 * elsewhere posting to 127.0.0.1) is refused with 403.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { CONSOLE_DIST, ensureConsoleBuilt } from "../console/build.js";
import { setConsoleHeaders } from "../local/console-headers.js";
import { isApiPath, LAMBDA_PAYLOAD_BYTES, listen, serveStatic } from "../local/http-server.js";
import type { WeftClient } from "./client.js";
import type { Context } from "./commands.js";
import { CliError, EXIT, UnreachableError } from "./errors.js";

export interface ConsoleServerOptions {
  /** The API's client: its base URL and, for a deployed API, its signer. */
  client: WeftClient;
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** The built console. Default console/dist. */
  staticDir?: string;
  onError?: (error: unknown) => void;
}

export interface RunningConsole {
  url: string;
  port: number;
  close(): Promise<void>;
}

function writeJson(response: ServerResponse, status: number, code: string, message: string): void {
  const body = Buffer.from(JSON.stringify({ error: { code, message, details: [] } }), "utf8");
  // The console's own answers (a page not found, a refusal) carry its headers too.
  setConsoleHeaders(response);
  response.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": body.length,
  });
  response.end(body);
}

async function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer | "too-large"> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).byteLength;
    if (size <= maxBytes) chunks.push(chunk as Buffer);
  }
  return size > maxBytes ? "too-large" : Buffer.concat(chunks);
}

/** The addresses this console answers as (its Host header, and its pages' Origin). */
function ownHosts(host: string, port: number): Set<string> {
  const names = new Set([host, "127.0.0.1", "localhost", "[::1]"]);
  return new Set(
    [...names].map((name) => `${name.includes(":") && !name.startsWith("[") ? `[${name}]` : name}:${port}`),
  );
}

export function startConsoleServer(options: ConsoleServerOptions): Promise<RunningConsole> {
  const host = options.host ?? "127.0.0.1";
  const staticDir = options.staticDir ?? CONSOLE_DIST;
  const onError = options.onError ?? ((error: unknown) => console.error("[weft console]", error));
  let hosts = new Set<string>();

  const server = createServer((request, response) => {
    void (async () => {
      const method = request.method ?? "GET";
      const target = new URL(request.url ?? "/", "http://console");
      if (!hosts.has(request.headers.host ?? "")) {
        return writeJson(response, 403, "Forbidden", "the weft console answers only at its own address");
      }
      const origin = request.headers.origin;
      if (origin !== undefined && !hosts.has(origin.replace(/^https?:\/\//, ""))) {
        return writeJson(response, 403, "Forbidden", `requests from ${origin} are not the console's own`);
      }
      if (!isApiPath(target.pathname)) {
        if (await serveStatic(staticDir, method, target.pathname, response)) return;
        return writeJson(response, 404, "NotFound", `no such page: ${target.pathname}`);
      }
      const body = await readBody(request, LAMBDA_PAYLOAD_BYTES);
      if (body === "too-large") {
        return writeJson(
          response,
          413,
          "PayloadTooLarge",
          `a request carries at most ${LAMBDA_PAYLOAD_BYTES} bytes`,
        );
      }
      const contentType = request.headers["content-type"];
      const answer = await options.client.forward({
        method,
        target: `${target.pathname}${target.search}`,
        ...(body.byteLength === 0 ? {} : { body: body.toString("utf8") }),
        ...(contentType === undefined ? {} : { contentType }),
      });
      response.writeHead(answer.status, {
        ...answer.headers,
        "content-length": answer.body.byteLength,
        "cache-control": "no-store",
      });
      response.end(answer.body);
    })().catch((error: unknown) => {
      if (response.headersSent) {
        response.destroy();
        return;
      }
      if (error instanceof UnreachableError) return writeJson(response, 502, "Unreachable", error.message);
      onError(error);
      // A signer without credentials, mostly: say so, the console shows it.
      writeJson(
        response,
        502,
        "ProxyFailed",
        `the console could not call the API: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
  });

  return listen(server, options.port, host).then(({ url, port }) => {
    hosts = ownHosts(host, port);
    return {
      url,
      port,
      close: () =>
        new Promise<void>((done, fail) => {
          server.close((error) => (error ? fail(error) : done()));
          server.closeAllConnections();
        }),
    };
  });
}

/** `weft console [--port P]`: builds the console when needed, serves it, and runs until a signal. */
export async function runConsole(ctx: Context, port: number): Promise<number> {
  const built = await ensureConsoleBuilt((message) => ctx.note(message));
  if (built === "unavailable") {
    throw new CliError(
      "the web console is not built and could not be (run `npm run build:console` to see why)",
      EXIT.failure,
      "ConsoleUnavailable",
    );
  }
  const client = ctx.client();
  let running: RunningConsole;
  try {
    running = await startConsoleServer({ client, port });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(
      code === "EADDRINUSE"
        ? `port ${port} is in use: pass another with --port (0 picks a free one)`
        : `cannot listen on 127.0.0.1:${port}: ${error instanceof Error ? error.message : String(error)}`,
      EXIT.failure,
      "ListenFailed",
    );
  }
  ctx.emit({ url: running.url, api: client.baseUrl, signed: client.signs });
  ctx.print(`weft console on ${running.url}/`);
  ctx.print(
    `  API ${client.baseUrl}${client.signs ? ", each call signed with SigV4 from your AWS credentials" : " (not signed)"}`,
  );
  ctx.note("Ctrl-C stops it");
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await running.close();
  return EXIT.ok;
}
