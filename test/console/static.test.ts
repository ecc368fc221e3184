/**
 * How the local runtime's HTTP server serves the console's files beside the API (local/http-server.ts):
 * `/` is index.html, every path that is not an API route may be a file, API routes always reach the
 * API, and nothing outside the folder (or hidden in it) is ever served. Every file carries the
 * console's headers (a strict Content-Security-Policy, no framing), from the local runtime and from
 * `weft console` alike.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WeftClient } from "../../cli/client.js";
import { type RunningConsole, startConsoleServer } from "../../cli/console.js";
import { isApiPath, type RunningHttpServer, startHttpServer } from "../../local/http-server.js";

let root: string;
let server: RunningHttpServer;
let proxy: RunningConsole;
const handled: string[] = [];

beforeAll(async () => {
  const base = await mkdtemp(path.join(tmpdir(), "weft-static-"));
  root = path.join(base, "dist");
  await mkdir(path.join(root, "assets"), { recursive: true });
  await writeFile(path.join(root, "index.html"), "<!doctype html><title>console</title>");
  await writeFile(path.join(root, "assets", "app-1234.js"), "console.log(1)");
  await writeFile(path.join(root, ".secret"), "hidden");
  await writeFile(path.join(base, "outside.txt"), "outside");
  // A file named like an API route: the API still wins.
  await writeFile(path.join(root, "workflows"), "not the API");
  server = await startHttpServer({
    port: 0,
    staticDir: root,
    handler: async (event) => {
      handled.push(`${event.requestContext.http.method} ${event.rawPath}`);
      return {
        statusCode: 404,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ error: { code: "NotFound" } }),
      };
    },
  });
  proxy = await startConsoleServer({
    client: new WeftClient({ baseUrl: server.url }),
    port: 0,
    staticDir: root,
  });
});
afterAll(async () => {
  await proxy?.close();
  await server?.close();
  await rm(path.dirname(root), { recursive: true, force: true });
});

describe("static files beside the API", () => {
  it("answers / with index.html and assets with their type, cached for good", async () => {
    const index = await fetch(`${server.url}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(index.headers.get("cache-control")).toBe("no-cache");
    expect(await index.text()).toContain("<title>console</title>");

    const asset = await fetch(`${server.url}/assets/app-1234.js`);
    expect(asset.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await asset.text()).toBe("console.log(1)");

    const head = await fetch(`${server.url}/index.html`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String("<!doctype html><title>console</title>".length));
  });

  it("gives the API every route of the contract, whatever files there are", async () => {
    handled.length = 0;
    await fetch(`${server.url}/workflows`);
    await fetch(`${server.url}/executions/abc/events?limit=5`);
    await fetch(`${server.url}/index.html`, { method: "POST" });
    expect(handled).toEqual(["GET /workflows", "GET /executions/abc/events", "POST /index.html"]);
    expect(isApiPath("/workflows/x")).toBe(true);
    expect(isApiPath("/dlq/redrive")).toBe(true);
    expect(isApiPath("/")).toBe(false);
    expect(isApiPath("/assets/app.js")).toBe(false);
  });

  it("never serves what is outside the folder or hidden in it: the API's 404 answers", async () => {
    handled.length = 0;
    for (const target of ["/.secret", "/..%2foutside.txt", "/assets/..%2f..%2foutside.txt", "/missing.js"]) {
      const answer = await fetch(`${server.url}${target}`);
      expect(answer.status, target).toBe(404);
      expect(await answer.text()).not.toMatch(/hidden|outside/);
    }
    expect(handled).toHaveLength(4);
  });
});

describe("the console's headers", () => {
  /** The policy's directives by name, each with its sources. */
  function directives(policy: string | null): Map<string, string[]> {
    const parsed = new Map<string, string[]>();
    for (const directive of (policy ?? "").split(";")) {
      const [name, ...sources] = directive.trim().split(/\s+/);
      if (name) parsed.set(name, sources);
    }
    return parsed;
  }

  function expectConsoleHeaders(answer: Response, what: string): void {
    const policy = directives(answer.headers.get("content-security-policy"));
    expect(Object.fromEntries(policy), what).toEqual({
      "default-src": ["'self'"],
      "worker-src": ["'self'"],
      "object-src": ["'none'"],
      "base-uri": ["'none'"],
      "form-action": ["'none'"],
      "frame-ancestors": ["'none'"],
    });
    expect(answer.headers.get("x-frame-options"), what).toBe("DENY");
    expect(answer.headers.get("referrer-policy"), what).toBe("no-referrer");
    expect(answer.headers.get("x-content-type-options"), what).toBe("nosniff");
  }

  for (const [name, base] of [
    ["the local runtime", () => server.url],
    ["weft console", () => proxy.url],
  ] as const) {
    it(`${name} serves every console file with them: no framing, a strict Content-Security-Policy`, async () => {
      for (const target of ["/", "/index.html", "/assets/app-1234.js"]) {
        for (const method of ["GET", "HEAD"]) {
          const answer = await fetch(`${base()}${target}`, { method });
          expect(answer.status, `${method} ${target}`).toBe(200);
          expectConsoleHeaders(answer, `${name}: ${method} ${target}`);
        }
      }
    });
  }

  it("weft console's own answers carry them too (a page not found, a request from another site)", async () => {
    const missing = await fetch(`${proxy.url}/missing.js`);
    expect(missing.status).toBe(404);
    expectConsoleHeaders(missing, "404");
    const foreign = await fetch(`${proxy.url}/workflows`, {
      headers: { origin: "https://elsewhere.example" },
    });
    expect(foreign.status).toBe(403);
    expectConsoleHeaders(foreign, "403");
  });
});
