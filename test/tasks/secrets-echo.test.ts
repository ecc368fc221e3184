/**
 * A server that echoes back the credential weft injected from a secret reference: in a 401's body
 * (the error's excerpt) and in a 200's body and headers (the output). Through the local runtime
 * (memory and the emulator), nothing weft keeps or answers holds the value in any form the server
 * used: not the execution view, the node's error or output, the history, the dead letter, the
 * stored node record, nor what the engine and the handlers logged. The secrets come from a local store (as
 * weft.config.json's `secrets` give them).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { LocalRuntime } from "../../local/runtime.js";
import { httpEgressPolicy } from "../../shared/config/egress.js";
import { MapSecretStore } from "../../shared/tasks/secrets.js";
import { uniqueName } from "../support/aws.js";
import { BACKEND_KINDS } from "../support/backends.js";
import { type ApiClient, apiClient, startRuntime } from "../support/runtime.js";

const user = "svc-reporting";
const password = `pa"ss-${uniqueName("pw")}`;
const basic = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
const bearerToken = uniqueName("tok-s3cr3t");
const bearer = `Bearer ${bearerToken}`;

/** Every form in which the server below echoes a secret: none may be kept. */
const FORBIDDEN = [
  bearer,
  bearerToken,
  basic,
  basic.slice("Basic ".length),
  `${user}:${password}`,
  password,
  JSON.stringify(password).slice(1, -1),
  JSON.stringify(bearer).slice(1, -1),
];

let server: Server;
let baseUrl = "";

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const auth = req.headers.authorization ?? "";
      const decoded = auth.startsWith("Basic ")
        ? Buffer.from(auth.slice(6), "base64").toString("utf8")
        : auth.slice("Bearer ".length);
      if (req.url?.startsWith("/deny")) {
        // A text body quoting the header whole, its decoded form, and a JSON text escaping it.
        res.writeHead(401, { "content-type": "text/plain" });
        res.end(`invalid credentials ${auth} (${decoded}) ${JSON.stringify({ got: auth, decoded })} end`);
        return;
      }
      res.writeHead(200, { "content-type": "application/json", "x-echo": auth });
      res.end(JSON.stringify({ got: auth, decoded, nested: [{ again: `x ${decoded} y` }], ok: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe.each(BACKEND_KINDS)("secrets echoed by the server are never stored (%s)", (kind) => {
  let runtime: LocalRuntime;
  let api: ApiClient;
  const logged: string[] = [];
  const log =
    (level: string) =>
    (message: string, ...rest: unknown[]) =>
      logged.push(`${level} ${message} ${JSON.stringify(rest)}`);

  // What the handlers' loggers write (stdout and stderr), passed through and kept.
  const streams = [process.stdout, process.stderr].map((stream) => {
    const write = stream.write.bind(stream);
    return vi.spyOn(stream, "write").mockImplementation(((chunk: string | Uint8Array, ...rest: never[]) => {
      logged.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof stream.write);
  });
  beforeAll(async () => {
    runtime = await startRuntime(kind, {
      taskOptions: {
        http: {
          egress: httpEgressPolicy(undefined, "local"),
          secrets: new MapSecretStore({ "echo/basic": basic, "echo/bearer": bearer }),
        },
      },
      engineOptions: { logger: { info: log("info"), warn: log("warn"), error: log("error") } },
      onError: (error, where) => logged.push(`${where} ${String(error)} ${(error as Error)?.stack ?? ""}`),
    });
    api = apiClient(runtime.url);
  });
  afterAll(async () => {
    await runtime?.stop();
    for (const spy of streams) spy.mockRestore();
  });

  /** Runs a one-node workflow calling `path` with `secret` as its Authorization. */
  async function run(path: string, secret: string) {
    const name = uniqueName("echo");
    const definition = {
      name,
      nodes: [
        {
          id: "call",
          type: "http",
          params: { method: "GET", url: `${baseUrl}${path}`, headers: { Authorization: { secret } } },
        },
      ],
    };
    expect((await api.call("POST", "/workflows", definition)).status).toBe(201);
    const started = await api.call("POST", "/executions", { workflow: name, input: {} });
    expect(started.status).toBe(202);
    const executionId = started.body.executionId as string;
    const view = await api.waitForEnd(executionId);
    const texts = {
      executionView: JSON.stringify((await api.call("GET", `/executions/${executionId}`)).body),
      events: JSON.stringify((await api.call("GET", `/executions/${executionId}/events`)).body),
      deadLetters: JSON.stringify((await api.call("GET", "/dlq")).body),
      storedNode: JSON.stringify(await runtime.ports.store.getNode(executionId, "call")),
      history: JSON.stringify(await runtime.ports.store.listHistory(executionId)),
      logs: logged.join("\n"),
    };
    return { view, executionId, texts };
  }

  function expectNoSecret(texts: Record<string, string>) {
    for (const [what, text] of Object.entries(texts))
      for (const secret of FORBIDDEN) expect(text, `${what} holds ${secret}`).not.toContain(secret);
  }

  it.each([
    ["Bearer", "echo/bearer"],
    ["Basic", "echo/basic"],
  ])(
    "a 401 whose body quotes the %s credential: the error keeps the excerpt, redacted",
    async (_, secret) => {
      const { view, executionId, texts } = await run("/deny", secret);
      expect(view.status).toBe("FAILED");
      const error = view.nodes[0]?.error;
      expect(error?.name).toBe("TerminalError");
      expect(error?.message).toContain("answered 401");
      expect(error?.message).toContain("invalid credentials ***");
      const deadLetters = JSON.parse(texts.deadLetters).deadLetters as Array<{ executionId: string }>;
      expect(deadLetters.some((letter) => letter.executionId === executionId)).toBe(true);
      expectNoSecret(texts);
    },
  );

  it.each([
    ["Bearer", "echo/bearer"],
    ["Basic", "echo/basic"],
  ])("a 200 whose body and headers echo the %s credential: the output is redacted", async (_, secret) => {
    const { view, texts } = await run("/ok", secret);
    expect(view.status).toBe("SUCCEEDED");
    const output = view.nodes[0]?.output as {
      body: Record<string, unknown>;
      headers: Record<string, string>;
    };
    expect(output.body.ok).toBe(true);
    expect(output.body.got).toBe("***");
    expect(output.headers["x-echo"]).toBe("***");
    expectNoSecret(texts);
  });
});
