/** The pure state of concurrency slots and their fair queue (domain/slots.ts). */
import { describe, expect, it } from "vitest";
import {
  acquireSlot,
  decodeSlots,
  EMPTY_SLOTS,
  encodeSlots,
  grantWaiter,
  holderId,
  parseHolderId,
  parsePlace,
  placeWaiter,
  releaseSlot,
  type SlotsState,
} from "../../shared/domain/slots.js";

/** A queue as the store keeps it: places, sorted. */
class Queue {
  state: SlotsState = decodeSlots(undefined);
  private readonly waiting: Array<{ place: string; who: string }> = [];
  add(who: string, group: string, priority?: number): void {
    const placed = placeWaiter(this.state, group, priority);
    this.state = placed.state;
    this.waiting.push({ place: placed.place, who });
    this.waiting.sort((a, b) => (a.place < b.place ? -1 : a.place > b.place ? 1 : 0));
  }
  grant(): string {
    const next = this.waiting.shift();
    if (!next) throw new Error("nobody waits");
    this.state = grantWaiter(this.state, next.place);
    return next.who;
  }
  get size(): number {
    return this.waiting.length;
  }
}

describe("concurrency slots", () => {
  it("grants up to the limit, once per attempt, and frees on release", () => {
    let state = EMPTY_SLOTS;
    const a = holderId("e1", "n", 1);
    const b = holderId("e2", "n", 1);
    const first = acquireSlot(state, a, 1, 10);
    expect(first).toMatchObject({ acquired: true, changed: true });
    if (first.acquired) state = first.state;
    // A copy of a's message: held already, nothing to write.
    expect(acquireSlot(state, a, 1, 11)).toMatchObject({ acquired: true, changed: false });
    expect(acquireSlot(state, b, 1, 12)).toEqual({ acquired: false, holders: [a] });
    state = releaseSlot(state, a).state;
    expect(releaseSlot(state, a).changed).toBe(false);
    expect(acquireSlot(state, b, 1, 13)).toMatchObject({ acquired: true, changed: true });
  });

  it("drops holders known stale (their attempt ended or their lease passed) to make room", () => {
    const dead = holderId("e1", "n", 1);
    const full = acquireSlot(EMPTY_SLOTS, dead, 1, 0);
    if (!full.acquired) throw new Error("the first holder must get the slot");
    const taken = acquireSlot(full.state, holderId("e2", "n", 1), 1, 5, new Set([dead]));
    expect(taken.acquired).toBe(true);
    if (taken.acquired) expect(Object.keys(taken.state.holders)).toEqual(["e2/n/1"]);
  });

  it("names an attempt by its holder id, and reads it back", () => {
    expect(parseHolderId(holderId("a-b/c", "node_1", 12))).toEqual({
      executionId: "a-b/c",
      nodeId: "node_1",
      attempt: 12,
    });
  });

  it("round-trips its stored form, and refuses one that is not its shape", () => {
    const queue = new Queue();
    queue.add("x", "g");
    expect(decodeSlots(encodeSlots(queue.state))).toEqual(queue.state);
    expect(() => decodeSlots('{"holders": []}')).toThrow();
  });
});

describe("the fair queue", () => {
  it("grants a late tenant within the next two grants behind 1,000 waiters of a busy one", () => {
    const queue = new Queue();
    for (let i = 0; i < 1000; i++) queue.add(`A${i}`, "A");
    for (let i = 0; i < 10; i++) expect(queue.grant()).toBe(`A${i}`);
    queue.add("B0", "B");
    const next = [queue.grant(), queue.grant()];
    expect(next).toContain("B0");
  });

  it("alternates between groups that wait together, first come first served within one", () => {
    const queue = new Queue();
    for (let i = 0; i < 3; i++) queue.add(`A${i}`, "A");
    for (let i = 0; i < 3; i++) queue.add(`B${i}`, "B");
    queue.add("C0", "C");
    const order = Array.from({ length: queue.size }, () => queue.grant());
    expect(order).toEqual(["A0", "B0", "C0", "A1", "B1", "A2", "B2"]);
  });

  it("grants higher priority first, and a high-priority grant does not move the others' clock", () => {
    const queue = new Queue();
    for (let i = 0; i < 5; i++) queue.add(`low${i}`, "A", 10);
    queue.add("urgent", "A", 90);
    expect(queue.grant()).toBe("urgent");
    queue.add("B0", "B", 10);
    // B is placed at the low clock's next round, beside A's first, not behind all of A's.
    expect(queue.grant()).toBe("low0");
    expect(queue.grant()).toBe("B0");
    expect(parsePlace(placeWaiter(queue.state, "Z", 100).place).level).toBe(100);
  });

  it("forgets groups the clock has passed, so the state stays small", () => {
    const queue = new Queue();
    for (let i = 0; i < 200; i++) queue.add(`w${i}`, `tenant-${i}`);
    while (queue.size > 0) queue.grant();
    expect(Object.keys(queue.state.groups)).toEqual([]);
  });
});
