/**
 * Any string as an `http` node's `params.url`, through the API on each backend: registration
 * answers 201 or 400 InvalidDefinition naming `nodes[i].params.url`, never a 500 — zod's URL check
 * and WHATWG `URL` (what fetch and the egress guard parse with) disagree on some strings. A URL
 * given by an expression that does not parse once evaluated fails its node for good.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createApiHandler } from "../../functions/api/app.js";
import { httpEgressPolicy } from "../../shared/config/egress.js";
import { httpTask } from "../../shared/tasks/http.js";
import { apiEvent, expectErrorAnswer } from "../api/helpers.js";
import { BACKEND_KINDS, type Backend, createBackend } from "../support/backends.js";
import { taskOf } from "../support/harness.js";
import { PATIENT, waitForProgress } from "../support/progress.js";

/** The two strings the issue found: zod said URL, `new URL` threw, the API answered 500. */
const NAMED = ["http://[fe80::1%25lo]:80/", "http://127.0.0.1%09:80/"];

/** Strings near URLs: schemes, hosts and the characters where URL parsers differ, in any order. */
const urlish = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        "http://",
        "https://",
        "HTTP://",
        "http:/",
        "http:",
        "ftp://",
        "",
        " http://",
        "\u00a0http://",
      ),
      fc.oneof(
        fc.domain(),
        fc.ipV4(),
        fc.ipV6().map((address) => `[${address}]`),
        fc.string({ maxLength: 12 }),
        fc.string({ unit: "binary", maxLength: 6 }),
      ),
      fc.constantFrom(
        "",
        "%25lo",
        "%09",
        "%00",
        "%",
        "%zz",
        "%2e",
        "\t",
        "\n",
        "\u00a0",
        "\u3002",
        "[",
        "]",
        "@",
        "\\",
        " ",
        "#",
        "?",
        "xn--",
        "\u0000",
      ),
      fc.constantFrom("", ":80", ":0", ":65536", ":x", ":", ":99999999"),
      fc.constantFrom("", "/", "/a?b#c", "/%zz", " /"),
    )
    .map((parts) => parts.join("")),
  fc.webUrl(),
  fc.string({ unit: "binary", maxLength: 40 }),
);

describe.each(BACKEND_KINDS)("http params.url at registration (%s)", PATIENT, (kind) => {
  async function withApi(run: (api: Api, backend: Backend) => Promise<void>): Promise<void> {
    // The deployed policy with loopback and private let through: most hosts pass the egress guard,
    // so strings reach every check after it.
    const egress = httpEgressPolicy({ loopback: true, private: true, cidrs: [] }, "deployed");
    const backend = await createBackend(kind, { tasks: [httpTask({ egress })] });
    const handler = createApiHandler(backend.engine, {
      logger: new Logger({ serviceName: "weft-api-test", logLevel: "SILENT" }),
    });
    try {
      await run(async (body) => {
        const raw = await handler(apiEvent({ method: "POST", path: "/workflows", body }));
        return {
          status: raw.statusCode ?? 200,
          body: raw.body === undefined ? undefined : JSON.parse(raw.body),
        };
      }, backend);
    } finally {
      await backend.cleanup();
    }
  }

  let named = 0;
  const definition = (url: unknown) => ({
    name: `urls-${named++}`,
    nodes: [
      { id: "first", type: "noop" },
      { id: "call", type: "http", dependsOn: ["first"], params: { method: "GET", url } },
    ],
  });

  it("answers 400 InvalidDefinition at nodes[1].params.url for the strings WHATWG URL refuses", async () => {
    await withApi(async (post) => {
      for (const url of NAMED) {
        expect(URL.canParse(url)).toBe(false);
        const error = expectErrorAnswer(await post(definition(url)), 400, "InvalidDefinition");
        expect(
          error.details.map((d) => d.path),
          url,
        ).toEqual(["nodes[1].params.url"]);
        // The same check for a map's task and for the workflow's onFailure handler.
        const elsewhere = expectErrorAnswer(
          await post({
            name: `urls-elsewhere-${named++}`,
            nodes: [
              {
                id: "each",
                type: "map",
                params: { items: [1, 2], task: { type: "http", params: { method: "GET", url } } },
              },
            ],
            onFailure: { type: "http", params: { method: "POST", url } },
          }),
          400,
          "InvalidDefinition",
        );
        expect(elsewhere.details.map((d) => d.path).sort(), url).toEqual([
          "nodes[0].params.task.params.url",
          "onFailure.params.url",
        ]);
      }
    });
  });

  it("never answers 500 for any string as the URL: 201, or 400 naming params.url", async () => {
    await withApi(async (post) => {
      await fc.assert(
        fc.asyncProperty(urlish, async (url) => {
          const answer = await post(definition(url));
          if (answer.status === 201) {
            // Registered: the URL is one fetch can use.
            expect(URL.canParse(url)).toBe(true);
            return;
          }
          const error = expectErrorAnswer(answer, 400, "InvalidDefinition");
          expect(error.details.map((d) => d.path)).toEqual(["nodes[1].params.url"]);
        }),
        { numRuns: kind === "memory" ? 500 : 60, examples: NAMED.map((url) => [url]) },
      );
    });
  });

  it("fails the node for good (InvalidParams) when an expression gives a URL that does not parse", async () => {
    await withApi(async (post, backend) => {
      const registered = await post({
        name: "url-by-expression",
        nodes: [
          {
            id: "call",
            type: "http",
            params: { method: "GET", url: "{% input.url %}" },
            retry: { maxAttempts: 3 },
          },
        ],
      });
      expect(registered.status).toBe(201);
      for (const url of [...NAMED, "not a url", 42]) {
        const { executionId } = await backend.engine.createExecution({
          workflow: "url-by-expression",
          input: { url },
        });
        const view = await waitForProgress(
          `the execution with url ${JSON.stringify(url)} to end`,
          async () => {
            for (;;) {
              const batch = await backend.consumer.receive({
                maxMessages: 10,
                waitSeconds: 0,
                visibilityTimeoutSeconds: 30,
              });
              if (batch.length === 0) break;
              for (const message of batch) {
                await backend.engine.handleTask(taskOf(message), { receiveCount: message.receiveCount });
                await backend.consumer.delete([message.receiptHandle]);
              }
            }
            const v = await backend.engine.describeExecution(executionId);
            return v.status === "RUNNING" || v.status === "PENDING"
              ? { done: false, progress: v.status }
              : { done: true, value: v };
          },
        );
        expect(view.status).toBe("FAILED");
        // Not retried: the definition's mistake, found once its expression was evaluated.
        expect(view.nodes[0]).toMatchObject({
          status: "FAILED",
          attempt: 1,
          error: { name: "InvalidParams" },
        });
        expect(view.nodes[0]?.error?.message).toContain("params.url");
      }
    });
  });
});

type Api = (body: unknown) => Promise<{ status: number; body: unknown }>;
