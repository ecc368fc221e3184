// The workflow run by the real engine in memory, on a virtual clock: no AWS, no server, no waiting.
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { createTestRuntime } from "weft-orchestrator/testing";
import { greet } from "../tasks/greet.js";

const hello = JSON.parse(readFileSync(new URL("../workflows/hello.json", import.meta.url), "utf8"));
const weft = await createTestRuntime({ tasks: [greet] });
afterAll(() => weft.close());

describe("hello", () => {
  it("greets in both languages", async () => {
    const run = await weft.run(hello, { name: "Ada" });
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output).toEqual({
      both: { english: { message: "Hello, Ada!" }, french: { message: "Bonjour, Ada!" } },
    });
  });

  it("fails the node when the input has no name", async () => {
    const run = await weft.run(hello, {});
    expect(run.status).toBe("FAILED");
  });

  it("waits a day in no time", async () => {
    const later = {
      name: "greet-tomorrow",
      nodes: [
        { id: "wait", type: "wait", params: { seconds: 86_400 } },
        { id: "greet", type: "greet", dependsOn: ["wait"] },
      ],
    };
    const started = weft.clock.now();
    const run = await weft.run(later, { name: "Ada" });
    expect(run.output).toEqual({ greet: { message: "Hello, Ada!" } });
    expect(weft.clock.now() - started).toBeGreaterThanOrEqual(86_400_000);
  });
});
