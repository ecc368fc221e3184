/** W3C traceparent parsing and formatting, and the trace ids weft derives (shared/domain/trace.ts). */
import { describe, expect, it } from "vitest";
import {
  attemptTrace,
  executionTrace,
  formatTraceparent,
  isTraceparent,
  parseTraceparent,
  startTrace,
} from "../../shared/domain/trace.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";
const VALID = `00-${TRACE_ID}-${PARENT_ID}-01`;

describe("parseTraceparent", () => {
  it("reads a version 00 traceparent", () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: TRACE_ID, parentId: PARENT_ID, flags: "01" });
    expect(parseTraceparent(`00-${TRACE_ID}-${PARENT_ID}-00`)?.flags).toBe("00");
  });

  it("ignores blanks around the value, as HTTP does", () => {
    expect(parseTraceparent(`  ${VALID}\t`)?.traceId).toBe(TRACE_ID);
  });

  it("keeps only the flags version 00 defines (sampled, random trace id)", () => {
    expect(parseTraceparent(`00-${TRACE_ID}-${PARENT_ID}-03`)?.flags).toBe("03");
    expect(parseTraceparent(`00-${TRACE_ID}-${PARENT_ID}-ff`)?.flags).toBe("03");
    expect(parseTraceparent(`00-${TRACE_ID}-${PARENT_ID}-08`)?.flags).toBe("00");
  });

  it("reads a later version by its first four fields", () => {
    expect(parseTraceparent(`01-${TRACE_ID}-${PARENT_ID}-01`)?.traceId).toBe(TRACE_ID);
    expect(parseTraceparent(`cc-${TRACE_ID}-${PARENT_ID}-01-what-comes-next`)?.parentId).toBe(PARENT_ID);
    // …but only when what follows them starts with "-".
    expect(parseTraceparent(`cc-${TRACE_ID}-${PARENT_ID}-01x`)).toBeUndefined();
  });

  it.each([
    ["empty", ""],
    ["not a string", 42],
    ["undefined", undefined],
    ["too short", `00-${TRACE_ID}-${PARENT_ID}-1`],
    ["version 00 with more after it", `00-${TRACE_ID}-${PARENT_ID}-01-extra`],
    ["version ff", `ff-${TRACE_ID}-${PARENT_ID}-01`],
    ["a version that is not hex", `0g-${TRACE_ID}-${PARENT_ID}-01`],
    ["upper-case hex", `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`],
    ["an all-zero trace id", `00-${"0".repeat(32)}-${PARENT_ID}-01`],
    ["an all-zero parent id", `00-${TRACE_ID}-${"0".repeat(16)}-01`],
    ["a short trace id", `00-${TRACE_ID.slice(1)}-${PARENT_ID}-010`],
    ["other separators", `00_${TRACE_ID}_${PARENT_ID}_01`],
    ["flags that are not hex", `00-${TRACE_ID}-${PARENT_ID}-0x`],
    ["two joined headers", `${VALID},${VALID}`],
    ["a very long value", `01-${TRACE_ID}-${PARENT_ID}-01-${"a".repeat(600)}`],
  ])("refuses %s", (_, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
    expect(isTraceparent(value)).toBe(false);
  });
});

describe("formatTraceparent", () => {
  it("writes version 00, which parses back to the same fields", () => {
    const text = formatTraceparent(TRACE_ID, PARENT_ID, "01");
    expect(text).toBe(VALID);
    expect(text).toHaveLength(55);
    expect(parseTraceparent(text)).toEqual({ traceId: TRACE_ID, parentId: PARENT_ID, flags: "01" });
  });
});

describe("an execution's trace", () => {
  it("continues a valid given traceparent, normalised to version 00", () => {
    expect(startTrace("ex-1", VALID)).toBe(VALID);
    expect(startTrace("ex-1", `01-${TRACE_ID}-${PARENT_ID}-01-more`)).toBe(VALID);
  });

  it("starts a new, sampled trace derived from the execution id when none (or a malformed one) is given", () => {
    const fresh = startTrace("ex-1");
    expect(parseTraceparent(fresh)).toMatchObject({ flags: "01" });
    // The same execution id always derives the same trace; another one another trace.
    expect(startTrace("ex-1")).toBe(fresh);
    expect(startTrace("ex-1", "garbage")).toBe(fresh);
    expect(startTrace("ex-1", `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`)).toBe(fresh);
    expect(parseTraceparent(startTrace("ex-2"))?.traceId).not.toBe(parseTraceparent(fresh)?.traceId);
  });

  it("is the record's, or for a record without one the trace its id derives", () => {
    expect(executionTrace({ executionId: "ex-1", trace: VALID })).toEqual({
      traceparent: VALID,
      traceId: TRACE_ID,
      spanId: PARENT_ID,
    });
    expect(executionTrace({ executionId: "ex-1" }).traceparent).toBe(startTrace("ex-1"));
  });
});

describe("an attempt's span", () => {
  const execution = { executionId: "ex-1", trace: VALID };

  it("is a child of the execution's: same trace id and flags, a span id of its own", () => {
    const span = attemptTrace(execution, "fetch", 1);
    expect(span.traceId).toBe(TRACE_ID);
    expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(span.spanId).not.toBe(PARENT_ID);
    expect(span.traceparent).toBe(`00-${TRACE_ID}-${span.spanId}-01`);
    expect(isTraceparent(span.traceparent)).toBe(true);
  });

  it("is stable for one attempt, and new for each attempt, node and execution", () => {
    const spans = [
      attemptTrace(execution, "fetch", 1),
      attemptTrace(execution, "fetch", 2),
      attemptTrace(execution, "other", 1),
      attemptTrace({ executionId: "ex-2", trace: VALID }, "fetch", 1),
      // Parts never run together: ("a/b", 1) and ("a", "b/1") are different spans.
      attemptTrace(execution, "map[1.2]", 1),
      attemptTrace(execution, "map[1.2", 1),
    ].map((s) => s.spanId);
    expect(new Set(spans).size).toBe(spans.length);
    expect(attemptTrace(execution, "fetch", 1)).toEqual(attemptTrace(execution, "fetch", 1));
  });

  it("keeps the execution's flags (an unsampled trace stays unsampled)", () => {
    const unsampled = { executionId: "ex-1", trace: `00-${TRACE_ID}-${PARENT_ID}-00` };
    expect(attemptTrace(unsampled, "a", 1).traceparent).toMatch(/-00$/);
  });
});
