/**
 * The task registry of the functions that never run `http` or `lambda` nodes (the api, the sweeper,
 * the DLQ consumer: shared/tasks/declared.ts) against the worker's (createFullTaskRegistry, as
 * createDeployedTaskRegistry builds it): the same task types, parsing and registering params alike,
 * so a definition the api accepts is one the worker runs; only `run` of those two differs.
 */
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { httpEgressPolicy } from "../../shared/config/egress.js";
import { declaredTaskRegistry } from "../../shared/tasks/declared.js";
import { MemoryEventSender } from "../../shared/tasks/emit.js";
import { createFullTaskRegistry } from "../../shared/tasks/loader.js";
import { defineTask, type TaskType } from "../../shared/tasks/task-type.js";

const egress = httpEgressPolicy(undefined, "deployed");
const custom = defineTask({ type: "custom-shout", params: z.object({ word: z.string() }), run: () => "!" });
const worker = createFullTaskRegistry({
  lambda: { invoke: async () => ({ payload: null }) },
  events: new MemoryEventSender(),
  lifecycleBusName: "bus",
  http: { egress },
  customTasks: [custom],
});
const declared = declaredTaskRegistry({
  egress,
  events: new MemoryEventSender(),
  lifecycleBusName: "bus",
  customTasks: [custom],
});

const shape = (task: TaskType) => ({
  inline: task.inline,
  outputsDeps: task.outputsDeps,
  composite: task.composite,
  defer: typeof task.defer,
  expectedMs: typeof task.expectedMs,
  registrationParams: task.registrationParams === undefined,
});
const issuesOf = (schema: z.core.$ZodType, value: unknown) => {
  const result = z.safeParse(schema, value);
  return result.success ? "ok" : result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

describe("declared task registry", () => {
  it("has the worker's task types with the same flags, and the bundle's custom types themselves", () => {
    expect(declared.names()).toEqual(worker.names());
    for (const name of worker.names())
      expect(shape(declared.get(name)!), name).toEqual(shape(worker.get(name)!));
    expect(declared.get("custom-shout")).toBe(custom);
  });

  it("parses and registers params as the worker does, http's egress and credential rules included", () => {
    const samples: Record<string, unknown[]> = {
      http: [
        { method: "GET", url: "https://example.com/a" },
        { method: "GET", url: "http://127.0.0.1/" },
        { method: "GET", url: "http://169.254.169.254/latest" },
        { method: "POST", url: "https://example.com", headers: { authorization: "Bearer x" } },
        { method: "POST", url: "https://example.com", headers: { authorization: { secret: "tok" } } },
        { method: "GET", url: "https://example.com", body: "x" },
        { method: "FETCH", url: "ftp://example.com" },
      ],
      lambda: [{ functionName: "my-fn" }, { functionName: "" }, { functionName: "a:b:c:d:e" }],
      emit: [{ detailType: "Done", detail: { a: 1 } }, { detailType: 5 }],
    };
    for (const [type, values] of Object.entries(samples)) {
      const ours = declared.get(type)!;
      const theirs = worker.get(type)!;
      for (const value of values) {
        expect(issuesOf(ours.params, value), `${type} params ${JSON.stringify(value)}`).toEqual(
          issuesOf(theirs.params, value),
        );
        expect(
          issuesOf(ours.registrationParams ?? ours.params, value),
          `${type} registration ${JSON.stringify(value)}`,
        ).toEqual(issuesOf(theirs.registrationParams ?? theirs.params, value));
      }
    }
    // The egress rule is really applied at registration (not only the same result by accident).
    expect(issuesOf(declared.get("http")!.registrationParams!, samples.http![1])).not.toBe("ok");
  });

  it("refuses to run http and lambda, naming the task type: only the worker runs them", async () => {
    for (const type of ["http", "lambda"]) {
      const run = async () =>
        declared.get(type)!.run({
          input: null,
          params: type === "http" ? { method: "GET", url: "https://example.com" } : { functionName: "f" },
          deps: {},
          context: {
            executionId: "e",
            nodeId: "n",
            attempt: 1,
            idempotencyKey: "k",
            signal: new AbortController().signal,
            deadline: Date.now() + 1000,
            sleep: async () => {},
            now: () => Date.now(),
          },
        });
      await expect(run()).rejects.toThrow(`the ${type} task type runs in the worker function`);
    }
  });
});
