/**
 * `weft workflows`, `weft show` and `weft console`: the real binary against a local runtime, and the
 * console's server in process — its files, its proxy of the API (signed with SigV4 for a deployed
 * API, exactly as the CLI's own calls), and what it refuses.
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingHttpHeaders, request } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WeftClient } from "../../cli/client.js";
import { type RunningConsole, startConsoleServer } from "../../cli/console.js";
import { createSigner } from "../../cli/signing.js";
import type { LocalRuntime } from "../../local/runtime.js";
import type { ErrorBody, ExecutionRef, WorkflowsPage } from "../../shared/http/contract.js";
import { type ApiClient, apiClient } from "../support/runtime.js";
import { repoRoot, startExampleRuntime, weft } from "./support.js";

const ORDERS = {
  name: "cli-orders",
  description: "orders, checked and shipped",
  defaults: { retry: { maxAttempts: 4 } },
  nodes: [
    { id: "load", type: "pass", params: { value: { id: 7 } } },
    { id: "check", type: "pass", dependsOn: ["load"], when: "{% deps.load.id > 0 %}" },
    {
      id: "charge",
      type: "fail",
      dependsOn: ["load"],
      params: { times: 1 },
      retry: { maxAttempts: 3 },
      timeoutSeconds: 30,
    },
    { id: "ship", type: "merge", dependsOn: ["check", "charge"], fanIn: "any" },
  ],
};

let runtime: LocalRuntime;
let api: ApiClient;

beforeAll(async () => {
  runtime = await startExampleRuntime();
  api = apiClient(runtime.url);
  expect((await api.call("POST", "/workflows", ORDERS)).status).toBe(201);
  expect((await api.call("POST", "/workflows", { ...ORDERS, description: "version two" })).status).toBe(201);
  expect(
    (await api.call("POST", "/workflows", { name: "cli-aaa", nodes: [{ id: "a", type: "noop" }] })).status,
  ).toBe(201);
});
afterAll(() => runtime?.stop());

describe("weft workflows and weft show", () => {
  it("lists the workflows by name, and shows a definition readably or as its JSON", async () => {
    const table = await weft(["workflows", "--api", runtime.url]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+LATEST\s+CREATED\s+DESCRIPTION$/);
    expect(lines[1]).toMatch(/^cli-aaa\s+v1\s+\d{4}-\d\d-\d\dT\S+Z$/);
    expect(lines[2]).toMatch(/^cli-orders\s+v2\s+\d{4}-\d\d-\d\dT\S+Z\s+version two$/);

    const json = await weft(["workflows", "--api", runtime.url, "--json", "--limit", "1"]);
    const page = JSON.parse(json.stdout);
    expect(page.workflows).toEqual([{ name: "cli-aaa", latestVersion: 1, createdAt: expect.any(String) }]);
    expect(page.next).toEqual(expect.any(String));
    expect(json.stderr).toBe("");

    const shown = await weft(["show", "cli-orders", "--version", "1", "--api", runtime.url]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("workflow cli-orders  version 1");
    expect(shown.stdout).toContain("orders, checked and shipped");
    expect(shown.stdout).toMatch(/defaults\s+\{"retry":\{"maxAttempts":4\}\}/);
    expect(shown.stdout).toContain("4 node(s), entry: load");
    expect(shown.stdout).toMatch(
      /charge {2}fail\n {2}dependsOn\s+load\n {2}params\s+\{"times":1\}\n {2}retry\s+\{"maxAttempts":3\}\n {2}timeout\s+30 s/,
    );
    expect(shown.stdout).toMatch(
      /check {2}pass\n {2}dependsOn\s+load\n {2}when\s+\{% deps\.load\.id > 0 %\}/,
    );
    expect(shown.stdout).toMatch(/ship {2}merge\n {2}dependsOn\s+check, charge {3}fanIn any/);

    // --json: the definition as registered, which register takes back as the same version.
    const raw = await weft(["show", "cli-orders", "--api", runtime.url, "--json"]);
    expect(JSON.parse(raw.stdout)).toEqual({ ...ORDERS, description: "version two" });

    const missing = await weft(["show", "nope", "--api", runtime.url]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('workflow "nope" does not exist');
  });

  it("shows a workflow's flow control: its start rate limit and a node's concurrency limits", async () => {
    const limited = {
      name: "cli-limited",
      rateLimit: { limit: 10, periodSeconds: 60 },
      nodes: [{ id: "sync", type: "noop", concurrency: { key: "{% input.tenant %}", limit: 2 } }],
    };
    expect((await api.call("POST", "/workflows", limited)).status).toBe(201);
    const shown = await weft(["show", "cli-limited", "--api", runtime.url]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/rateLimit\s+\{"limit":10,"periodSeconds":60\}/);
    expect(shown.stdout).toMatch(
      /sync {2}noop\n {2}concurrency\s+\{"key":"\{% input\.tenant %\}","limit":2\}/,
    );
  });

  it("names every command in --help", async () => {
    const help = await weft(["--help"]);
    expect(help.code).toBe(0);
    for (const command of [
      "workflows [--limit N] [--next TOKEN]",
      "show WORKFLOW [--version N]",
      "console [--port P]",
    ])
      expect(help.stdout).toContain(command);
  });
});

describe("weft console", () => {
  let consoleServer: RunningConsole;

  beforeAll(async () => {
    consoleServer = await startConsoleServer({ client: new WeftClient({ baseUrl: runtime.url }), port: 0 });
  });
  afterAll(() => consoleServer?.close());

  it("serves the console's files and forwards the API's routes to the API", async () => {
    const index = await fetch(`${consoleServer.url}/`);
    expect(index.status).toBe(200);
    expect(await index.text()).toContain('<div id="app">');

    const listed = await fetch(`${consoleServer.url}/workflows?limit=1`);
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as WorkflowsPage).workflows[0]?.name).toBe("cli-aaa");

    const started = await fetch(`${consoleServer.url}/executions`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: consoleServer.url },
      body: JSON.stringify({ workflow: "cli-aaa", input: { via: "console" } }),
    });
    expect(started.status).toBe(202);
    const { executionId } = (await started.json()) as ExecutionRef;
    expect((await api.waitForEnd(executionId)).input).toEqual({ via: "console" });

    // The API's own errors come through as they are.
    const missing = await fetch(`${consoleServer.url}/executions/none`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as ErrorBody).error.code).toBe("NotFound");
    // What is neither a file nor a route is the console's 404.
    expect((await fetch(`${consoleServer.url}/no/such/page`)).status).toBe(404);
  });

  it("refuses other sites' requests and other hosts (it acts with the user's credentials)", async () => {
    const foreign = await fetch(`${consoleServer.url}/executions`, {
      method: "POST",
      headers: { "content-type": "text/plain", origin: "https://evil.example" },
      body: JSON.stringify({ workflow: "cli-aaa" }),
    });
    expect(foreign.status).toBe(403);
    expect(await getWithHost(consoleServer.port, "/workflows", "attacker.example:80")).toBe(403);
  });

  it("signs every forwarded call with SigV4 when the API is a deployed one", async () => {
    const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: string }> = [];
    const upstream = createServer((request, response) => {
      let body = "";
      request.setEncoding("utf8").on("data", (chunk: string) => {
        body += chunk;
      });
      request.on("end", () => {
        seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers, body });
        response.writeHead(202, { "content-type": "application/json" });
        response.end(JSON.stringify({ executionId: "e-1", status: "RUNNING" }));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/prod`;
    const credentials = {
      accessKeyId: "AKIDEXAMPLE",
      secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    };
    const signingDate = new Date("2026-01-02T03:04:05Z");
    const signer = createSigner({ region: "eu-west-1", credentials, signingDate });
    const proxy = await startConsoleServer({ client: new WeftClient({ baseUrl: base, signer }), port: 0 });
    try {
      const body = JSON.stringify({ workflow: "w", input: { n: 1 } });
      const answer = await fetch(`${proxy.url}/executions?x=1`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      expect(answer.status).toBe(202);
      expect(await answer.json()).toEqual({ executionId: "e-1", status: "RUNNING" });
      const [request] = seen;
      expect(request).toMatchObject({ method: "POST", url: "/prod/executions?x=1", body });
      expect(request?.headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20260102\/eu-west-1\/execute-api\/aws4_request, /,
      );
      // The signature is the one the CLI's signer makes for exactly this request.
      const expected = await signer({
        method: "POST",
        url: new URL(`${base}/executions?x=1`),
        headers: { accept: "application/json", "content-type": "application/json" },
        body,
      });
      expect(request?.headers.authorization).toBe(expected.authorization);
    } finally {
      await proxy.close();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });

  it("runs as `weft console --port 0` until SIGTERM", async () => {
    const child = spawn(
      process.execPath,
      [path.join(repoRoot, "bin/weft.js"), "console", "--api", runtime.url, "--port", "0", "--json"],
      { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } },
    );
    let stdout = "";
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const started = await new Promise<{ url: string; api: string; signed: boolean }>((resolve, reject) => {
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
        try {
          resolve(JSON.parse(stdout));
        } catch {
          // Not all of it yet.
        }
      });
      child.once("exit", (code) => reject(new Error(`weft console exited ${code}: ${stderr}`)));
    });
    expect(started).toMatchObject({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      api: runtime.url,
    });
    expect(started.signed).toBe(false);
    const listed = (await (await fetch(`${started.url}/workflows`)).json()) as WorkflowsPage;
    expect(listed.workflows.length).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});

/** A GET with a Host header of our choosing (a DNS-rebound page's; fetch always sends the URL's own). */
function getWithHost(port: number, target: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: "127.0.0.1", port, path: target, headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    outgoing.once("error", reject);
    outgoing.end();
  });
}
