/** Placement (domain/placement.ts) and its validation: runsOn, heartbeatSeconds, long timeouts. */
import { describe, expect, it } from "vitest";
import { decodeAttemptToken, encodeAttemptToken } from "../../shared/domain/attempt-token.js";
import {
  capacityRefusal,
  placementRefusal,
  type WorkerRecord,
  workerHealth,
} from "../../shared/domain/placement.js";
import { validateDefinition } from "../../shared/domain/validate.js";
import { createTaskRegistry } from "../../shared/tasks/builtins.js";

const tasks = createTaskRegistry();

const worker = (overrides: Partial<WorkerRecord> = {}): WorkerRecord => ({
  workerId: "w1",
  pool: "gpu",
  executors: ["ffmpeg"],
  capabilities: { gpu: "nvidia", region: "eu" },
  labels: ["high-mem"],
  maxParallel: 2,
  registeredAt: 0,
  heartbeatAt: 0,
  heartbeatSeconds: 30,
  holds: {},
  version: 1,
  ...overrides,
});

function problems(nodes: unknown[]) {
  const result = validateDefinition({ name: "wf", nodes }, tasks);
  return result.ok ? [] : result.problems.map((p) => `${p.path} ${p.code}`);
}

describe("placement", () => {
  it("matches pool, executors, capabilities, labels, allow- and deny-lists", () => {
    const w = worker();
    expect(placementRefusal({ pool: "gpu" }, w)).toBeUndefined();
    expect(placementRefusal({ pool: "cpu" }, w)).toContain('pool "gpu"');
    expect(placementRefusal({ pool: "gpu", executors: ["ffmpeg", "blender"] }, w)).toContain("blender");
    expect(placementRefusal({ pool: "gpu", capabilities: { gpu: "nvidia" } }, w)).toBeUndefined();
    expect(placementRefusal({ pool: "gpu", capabilities: { gpu: "amd" } }, w)).toContain('"gpu"');
    expect(placementRefusal({ pool: "gpu", labels: ["spot"] }, w)).toContain("spot");
    expect(placementRefusal({ pool: "gpu", allowedWorkers: ["w2"] }, w)).toContain("not an allowed");
    expect(placementRefusal({ pool: "gpu", forbiddenWorkers: ["w1"] }, w)).toContain("forbidden");
  });

  it("counts a worker's holds against its maxParallel and a node's maxParallelPerWorker", () => {
    const hold = (nodeId: string, slot: string) => ({
      executionId: "e",
      nodeId,
      attempt: 1,
      leaseToken: "t",
      slot,
      claimedAt: 0,
    });
    const one = worker({ holds: { "e/a": hold("a", "wf/a") } });
    expect(capacityRefusal(one, { pool: "gpu" }, "wf/b")).toBeUndefined();
    expect(capacityRefusal(one, { pool: "gpu", maxParallelPerWorker: 1 }, "wf/a")).toContain("per worker");
    const full = worker({ holds: { "e/a": hold("a", "wf/a"), "e/b": hold("b", "wf/b") } });
    expect(capacityRefusal(full, { pool: "gpu" }, "wf/c")).toContain("2 of its 2");
  });

  it("tells healthy, stale and dead workers apart by their last heartbeat", () => {
    const w = worker({ heartbeatAt: 1_000_000, heartbeatSeconds: 10 });
    expect(workerHealth(w, 1_000_000 + 20_000)).toBe("healthy");
    expect(workerHealth(w, 1_000_000 + 20_001)).toBe("stale");
    expect(workerHealth(w, 1_000_000 + 60_001)).toBe("dead");
  });

  it("tokens round-trip, and anything else is no token", () => {
    const token = { executionId: "e1", nodeId: "n", attempt: 3, leaseToken: "secret" };
    expect(decodeAttemptToken(encodeAttemptToken(token))).toEqual(token);
    expect(decodeAttemptToken("wt1.bm9wZQ")).toBeUndefined();
    expect(decodeAttemptToken("")).toBeUndefined();
    expect(
      decodeAttemptToken(`wt1.${Buffer.from('{"e":"x","n":"y","a":0,"t":"z"}').toString("base64url")}`),
    ).toBeUndefined();
  });
});

describe("placement in definitions", () => {
  it("accepts an external node of a type only its workers know, for up to a year with heartbeats", () => {
    expect(
      problems([
        {
          id: "render",
          type: "blender",
          runsOn: { pool: "gpu" },
          timeoutSeconds: 86_400,
          heartbeatSeconds: 60,
        },
      ]),
    ).toEqual([]);
  });

  it("refuses what cannot work, naming each field", () => {
    expect(
      problems([
        { id: "long", type: "noop", timeoutSeconds: 3600 },
        { id: "silent", type: "blender", runsOn: { pool: "gpu" }, timeoutSeconds: 3600 },
        { id: "beats", type: "noop", heartbeatSeconds: 10 },
        { id: "slow", type: "blender", runsOn: { pool: "gpu" }, timeoutSeconds: 60, heartbeatSeconds: 60 },
        { id: "inside", type: "merge", runsOn: { pool: "gpu" } },
        { id: "bad", type: "blender", runsOn: { pool: "", executors: ["a b"], extra: true } },
        {
          id: "year",
          type: "blender",
          runsOn: { pool: "gpu" },
          timeoutSeconds: 400 * 86_400,
          heartbeatSeconds: 60,
        },
      ]),
    ).toEqual(
      expect.arrayContaining([
        "nodes[0].timeoutSeconds timeout_exceeds_lambda",
        "nodes[1].heartbeatSeconds heartbeat_required",
        "nodes[2].heartbeatSeconds heartbeat_without_placement",
        "nodes[3].heartbeatSeconds heartbeat_too_long",
        "nodes[4].runsOn placement_not_allowed",
        expect.stringMatching(/^nodes\[5\]\.runsOn\.pool /),
        expect.stringMatching(/^nodes\[5\]\.runsOn\.executors\[0\] /),
        expect.stringMatching(/^nodes\[5\]\.runsOn\.extra unknown_field/),
        expect.stringMatching(/^nodes\[6\]\.timeoutSeconds /),
      ]),
    );
  });

  it("still checks the params of a known type placed on external workers", () => {
    expect(problems([{ id: "p", type: "sleep", params: { ms: "soon" }, runsOn: { pool: "gpu" } }])).toEqual([
      expect.stringMatching(/^nodes\[0\]\.params\.ms /),
    ]);
  });
});
