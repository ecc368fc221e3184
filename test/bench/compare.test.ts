/** `npm run bench -- --compare`: two runs side by side, with Step Functions beside them. */
import { describe, expect, it } from "vitest";
import { renderComparison } from "../../bench/compare.js";

const run = (date: string, backend: string, writeUnits: number, total: number) => ({
  date,
  results: [
    {
      workload: "many-small",
      backend,
      nodesPerExecution: 3,
      totalNodes: 600,
      calls: { ddb: { writeUnits: writeUnits * 600 - 200, indexWriteUnits: 200 } },
    },
  ],
  modeled: [{ workload: "many-small", total }],
});

describe("bench --compare", () => {
  it("puts each workload's write units and $ before and after beside Step Functions Standard and Express", () => {
    const lines = renderComparison(run("before", "moto", 4, 3.5), run("after", "memory-6ms", 2, 3));
    expect(lines[0]).toContain("counted on moto");
    expect(lines[0]).toContain("counted on memory-6ms");
    const row = lines.find((line) => line.startsWith("| many-small"))!;
    const cells = row.split("|").map((cell) => cell.trim());
    // workload, nodes/execution, WU before, after, $ before, after, $ per M executions, Standard, ÷, Express, ÷
    expect(cells.slice(1, 8)).toEqual(["many-small", "3", "4.00", "**2.00**", "3.50", "**3.00**", "9.00"]);
    expect(cells[8]).toBe("25");
    expect(cells[9]).toBe("8.3×");
    // Express: $1.00 per million starts + 100 ms of 64 MB, over 3 nodes.
    expect(Number(cells[10])).toBeCloseTo((1 + 0.1 * 0.0625 * 16.67) / 3, 2);
    expect(cells[11]).toMatch(/^8\.\d×$/);
  });
});
