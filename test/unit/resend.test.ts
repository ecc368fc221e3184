import { describe, expect, it } from "vitest";
import { resendDue, resendPointAfter } from "../../shared/domain/resend.js";

const points = (count: number, grace: number, cap: number) => {
  const out: number[] = [];
  let age = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < count; i++) {
    age = resendPointAfter(age, grace, cap);
    out.push(age);
  }
  return out;
};

describe("sweeper resend points", () => {
  it("double from the grace period until the interval reaches the cap, then keep to the cap", () => {
    expect(points(8, 120, 1920)).toEqual([120, 240, 480, 960, 1920, 3840, 5760, 7680]);
    expect(points(6, 120, 300)).toEqual([120, 240, 480, 780, 1080, 1380]);
    expect(resendPointAfter(-5, 120, 300)).toBe(120);
    expect(resendPointAfter(119, 120, 300)).toBe(120);
    expect(resendPointAfter(120, 120, 300)).toBe(240);
    expect(resendPointAfter(10_000, 120, 300)).toBe(10_080);
  });

  it("are due once per point passed since the previous sweep, never before the grace period", () => {
    const none = Number.NEGATIVE_INFINITY;
    expect(resendDue(119, none, 120, 300)).toBe(false);
    expect(resendDue(120, none, 120, 300)).toBe(true);
    // Swept at 130 (resent then): nothing more until 240.
    expect(resendDue(200, 130, 120, 300)).toBe(false);
    expect(resendDue(240, 130, 120, 300)).toBe(true);
    // Sweeps every 60 s over a long backlog resend at 120, 240, 480, 780…: 4 of 14 sweeps.
    const sweeps = Array.from({ length: 14 }, (_, i) => 60 * (i + 1));
    const resent = sweeps.filter((age, i) => resendDue(age, i === 0 ? none : sweeps[i - 1]!, 120, 300));
    expect(resent).toEqual([120, 240, 480, 780]);
  });
});
