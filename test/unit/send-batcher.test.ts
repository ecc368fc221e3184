import { describe, expect, it } from "vitest";
import { SendBatcher } from "../../shared/engine/send-batcher.js";
import type { TaskMessage, TaskQueue } from "../../shared/ports.js";

/** A queue whose sends wait until released (or failed), so the test decides what is in flight. */
function heldQueue() {
  const calls: Array<{ nodes: string[]; delaySeconds: number | undefined }> = [];
  const held: Array<{ release: () => void; fail: (error: Error) => void }> = [];
  const queue: TaskQueue = {
    async send(messages, options) {
      calls.push({ nodes: messages.map((m) => m.nodeId), delaySeconds: options?.delaySeconds });
      await new Promise<void>((release, fail) => held.push({ release, fail }));
    },
  };
  const settle = async (how: "release" | "fail" = "release") => {
    const next = held.shift();
    if (how === "release") next?.release();
    else next?.fail(new Error("SQS said no"));
    await new Promise((r) => setImmediate(r));
  };
  return { queue, calls, held, settle };
}

const task = (nodeId: string): TaskMessage => ({ executionId: "ex", nodeId, attempt: 1 });

describe("SendBatcher (group commit of task sends in one invocation)", () => {
  it("sends the first at once, and the sends that come while it is in flight together in the next call", async () => {
    const { queue, calls, settle } = heldQueue();
    const batcher = new SendBatcher(queue);
    const settled: string[] = [];
    const first = batcher.send([task("a")]).then(() => settled.push("a"));
    expect(calls).toEqual([{ nodes: ["a"], delaySeconds: undefined }]);
    const later = [
      batcher.send([task("b"), task("c")]).then(() => settled.push("b,c")),
      batcher.send([task("d")]).then(() => settled.push("d")),
    ];
    expect(calls).toHaveLength(1); // they wait for the call in flight
    await settle();
    await first;
    expect(settled).toEqual(["a"]); // the others are not sent yet, so not settled
    expect(calls.map((c) => c.nodes)).toEqual([["a"], ["b", "c", "d"]]);
    await settle();
    await Promise.all(later);
    expect(settled).toEqual(["a", "b,c", "d"]);
    // Idle again: the next send goes at once, alone.
    void batcher.send([task("e")]);
    expect(calls.map((c) => c.nodes)).toEqual([["a"], ["b", "c", "d"], ["e"]]);
  });

  it("keeps delays apart: each delay has its own calls", async () => {
    const { queue, calls, held, settle } = heldQueue();
    const batcher = new SendBatcher(queue);
    const all = [
      batcher.send([task("a")]),
      batcher.send([task("b")], { delaySeconds: 5 }),
      batcher.send([task("c")], { delaySeconds: 0 }),
    ];
    expect(calls).toEqual([
      { nodes: ["a"], delaySeconds: undefined },
      { nodes: ["b"], delaySeconds: 5 },
    ]);
    while (held.length > 0) await settle();
    await Promise.all(all);
    expect(calls).toEqual([
      { nodes: ["a"], delaySeconds: undefined },
      { nodes: ["b"], delaySeconds: 5 },
      { nodes: ["c"], delaySeconds: undefined },
    ]);
  });

  it("rejects exactly the sends whose call failed; the lane goes on with the next", async () => {
    const { queue, calls, settle } = heldQueue();
    const batcher = new SendBatcher(queue);
    const first = expect(batcher.send([task("a")])).rejects.toThrow("SQS said no");
    const second = batcher.send([task("b")]);
    const third = batcher.send([task("c")]);
    await settle("fail");
    await first;
    expect(calls.map((c) => c.nodes)).toEqual([["a"], ["b", "c"]]);
    await settle();
    await expect(Promise.all([second, third])).resolves.toEqual([undefined, undefined]);
  });

  it("sends nothing for no messages", async () => {
    const { queue, calls } = heldQueue();
    await new SendBatcher(queue).send([]);
    expect(calls).toEqual([]);
  });
});
