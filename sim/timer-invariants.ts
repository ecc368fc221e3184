/**
 * The timers' invariants (issue 26), checked on what the world recorded: every timer armed in the
 * due index (AuditStore.timersArmed), every message put on the task queue (SimQueue.sends), the
 * final sweep cursor, and every node write.
 *  - [timer-lost] a timer the sweeps' cursor passed was sent: a message naming the same attempt
 *    (and lease, and check), put after it was armed, delivered no earlier than its time (to the
 *    second: delays are whole seconds).
 *  - [timer-late] it was sent no later than its bound after its time (or its arming, if later):
 *    the world's sweep period, outage and stalls, which the world knows.
 *  - [timer-early] no attempt is claimed before its time: a QUEUED node with a `notBefore` (a wait,
 *    a retry's backoff) goes RUNNING only once the clock reached it.
 * "Fires once in effect" is the fencing every node write already has (invariants.ts: one claim
 * and one end per attempt); a timer sent twice is harmless and not a violation here.
 */
import type { TaskMessage } from "../shared/domain/task-message.js";
import type { Timer, TimerCursor } from "../shared/domain/timers.js";
import type { NodeWrite } from "./audit-store.js";
import type { Violation } from "./invariants.js";
import type { QueueSend } from "./sim-queue.js";

export interface TimerFacts {
  armed: ReadonlyArray<{ timer: Timer; at: number }>;
  /** The queue's sends, their times on the engine's clock (epoch ms). */
  sends: readonly QueueSend[];
  cursor: TimerCursor | undefined;
  nodeWrites: readonly NodeWrite[];
  /** How late past its time (or arming) a timer may be sent in this world. */
  lateBoundMs: number;
}

const SECOND = 1000;

export function checkTimers(facts: TimerFacts): Violation[] {
  const violations: Violation[] = [];
  const sendsOf = new Map<string, QueueSend[]>();
  for (const send of facts.sends) {
    const key = identity(send.message);
    sendsOf.set(key, [...(sendsOf.get(key) ?? []), send]);
  }
  for (const { timer, at } of facts.armed) {
    const { executionId, nodeId } = timer.message;
    const sent = (sendsOf.get(identity(timer.message)) ?? []).filter(
      // At its time, to the second (a delay is whole seconds), or at once when sent overdue.
      (s) => s.sentAt >= at && s.dueAt >= timer.dueAt - SECOND,
    );
    const label = `timer of attempt ${timer.message.attempt} due at ${timer.dueAt} (armed at ${at})`;
    if (sent.length === 0) {
      if (facts.cursor !== undefined && timer.dueAt <= facts.cursor.through)
        violations.push({
          rule: "timer-lost",
          executionId,
          nodeId,
          message: `${label}: never sent, though the sweeps' cursor passed it (through ${facts.cursor.through})`,
        });
      continue;
    }
    const first = Math.min(...sent.map((s) => s.sentAt));
    const from = Math.max(timer.dueAt, at);
    if (first > from + facts.lateBoundMs)
      violations.push({
        rule: "timer-late",
        executionId,
        nodeId,
        message: `${label}: first sent at ${first}, ${first - from} ms past its time (bound ${facts.lateBoundMs} ms)`,
      });
  }
  for (const write of facts.nodeWrites) {
    const { before, after } = write;
    if (before?.status !== "QUEUED" || after.status !== "RUNNING" || before.notBefore === undefined) continue;
    if (write.at < before.notBefore)
      violations.push({
        rule: "timer-early",
        executionId: write.executionId,
        nodeId: write.nodeId,
        message: `attempt ${after.attempt} claimed at ${write.at}, before its time ${before.notBefore}`,
      });
  }
  return violations;
}

/** What a timer's message is fenced on: the attempt it names, and the lease and check it carries. */
function identity(message: TaskMessage): string {
  const { executionId, nodeId, attempt, lease, check } = message;
  return JSON.stringify([executionId, nodeId, attempt, lease ?? null, check ?? false]);
}
