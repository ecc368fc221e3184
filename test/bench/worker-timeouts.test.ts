/**
 * The benchmark reports the chain under the deployed worker timeout (300 s, the main runs') beside a
 * 15-minute worker: with continuation decided by expected run times, both run a chain in one
 * invocation per 17 nodes. Counts only, on the memory backend (never timings).
 */
import { describe, expect, it } from "vitest";
import { runBench } from "../../bench/main.js";
import { renderMarkdown } from "../../bench/report.js";

describe("bench: worker timeouts", () => {
  it("runs the chain under the deployed 300 s worker and a 15-minute one, one invocation for its 10 nodes under each", async () => {
    const report = await runBench({ quick: true, backends: ["memory"], workloads: ["chain"] });
    expect(report.settings.workerTimeoutSeconds).toBe(300);
    expect(report.results.map((r) => [r.workload, r.workerTimeoutSeconds])).toEqual([["chain", 300]]);
    const points = report.workerTimeouts?.points ?? [];
    expect(points.map((p) => [p.workload, p.workerTimeoutSeconds, p.backend])).toEqual([
      ["chain", 300, "memory"],
      ["chain", 900, "memory"],
    ]);
    for (const point of points) {
      // The entry's message, and the nine others continued in its invocation.
      expect(point.workerInvocations * 10).toBe(1);
      expect(point.sqsRequests).toBeLessThanOrEqual(0.3);
      expect(point.met).toBe(true);
    }
    const markdown = renderMarkdown(report);
    expect(markdown).toContain("## Worker timeout: the deployed default beside a 15-minute worker");
    expect(markdown).toContain("| chain | 300 s (deployed default) | memory |");
    expect(markdown).toContain("| chain | 900 s (15 minutes, as benchmarked before) | memory |");
  });
});
