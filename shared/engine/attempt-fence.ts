/**
 * How the writes of one attempt are fenced.
 *
 * A claimed attempt holds a lease: every write that renews or ends it is conditioned on the lease's
 * token (RUNNING, this token), so a superseded attempt can write nothing.
 *
 * A short attempt writes no claim at all (docs/guarantees.md §1): the first attempt of a direct or
 * join node — whose message is its dispatch — runs at once, and its claim goes with its first write:
 * the lazy claim, when it runs past `claimAfterMs` (with what would have been its first heartbeat),
 * or else its ending (completion, retry, failure, skip). That write carries what the claim would
 * have written (attempt 1, the queued and started times, a join's inputs, the NodeQueued and
 * NodeStarted events) under the claim's own condition (the node PENDING and never queued — or, one
 * revived by a redrive, QUEUED at attempt 1 and due), so it is accepted at most once per attempt
 * however many copies of the message ran. A node whose handler ran under copies of one message
 * (SQS delivers at least once) thus completes once, from the first copy to write; the others'
 * writes are refused. The claim is one write fewer per node: most nodes end within seconds.
 */
import type { HistoryEvent, Lease, NodeRecord } from "../domain/records.js";
import type { NodeCondition, NodePatch, Outcome } from "../ports.js";

/** One way the unwritten claim may be accepted: its condition, and what it writes. */
export interface ClaimWay {
  condition: NodeCondition;
  patch: NodePatch;
  events: readonly HistoryEvent[];
}

/** A node write: the store's transitionNode or failNode, bound to the node. */
export type NodeWriter = (
  condition: NodeCondition,
  patch: NodePatch,
  events: readonly HistoryEvent[],
) => Promise<Outcome<NodeRecord>>;

export class AttemptFence {
  private constructor(
    readonly lease: Lease,
    /** The claim not written yet, in the order its ways are tried; undefined once claimed. */
    private unwritten: readonly ClaimWay[] | undefined,
    /** Told once the claim is written (its metric and lifecycle event), with the record written. */
    private readonly onClaimed?: (record: NodeRecord) => Promise<void>,
  ) {}

  /** An attempt whose claim is written: its lease fences its writes. */
  static held(lease: Lease): AttemptFence {
    return new AttemptFence(lease, undefined);
  }

  /** An attempt that runs before its claim is written (its first write carries it). */
  static unclaimed(
    lease: Lease,
    ways: readonly ClaimWay[],
    onClaimed?: (record: NodeRecord) => Promise<void>,
  ): AttemptFence {
    return new AttemptFence(lease, ways, onClaimed);
  }

  /** The refusal of this attempt's claim (every way refused), the node as found; once refused, it stays. */
  private refused?: { current: NodeRecord | undefined };

  get claimed(): boolean {
    return this.unwritten === undefined;
  }

  /**
   * Set when a write of the attempt not claimed yet was refused: its claim was refused, and the
   * worker handles it as any refused claim (a copy of the message, an end that got there first).
   */
  get refusal(): { current: NodeRecord | undefined } | undefined {
    return this.refused;
  }

  /**
   * A write of the attempt. Claimed: on its lease (with `extra` conditions). Unclaimed: under each
   * way of its claim in turn — while the refusal finds the node as the next way expects — carrying
   * that way's patch and events before its own; accepted, the attempt is claimed.
   */
  async write(
    writer: NodeWriter,
    extra: Omit<NodeCondition, "status">,
    patch: NodePatch,
    /** The write's own events, made for each call (history-stamps.ts: an event is made with its write). */
    events: () => readonly HistoryEvent[],
  ): Promise<Outcome<NodeRecord>> {
    const ways = this.unwritten;
    if (!ways)
      return writer({ status: ["RUNNING"], leaseToken: this.lease.token, ...extra }, patch, events());
    let outcome: Outcome<NodeRecord> | undefined;
    for (const way of ways) {
      if (outcome && !outcome.ok && !matches(outcome.current, way.condition)) break;
      // The claim's events were made as the attempt began; the write's own with each call.
      outcome = await writer({ ...way.condition, ...unclaimedExtra(extra) }, { ...way.patch, ...patch }, [
        ...way.events,
        ...events(),
      ]);
      if (outcome.ok) {
        this.unwritten = undefined;
        await this.onClaimed?.(outcome.record);
        return outcome;
      }
    }
    const refused = outcome ?? { ok: false as const, current: undefined };
    if (
      !refused.ok &&
      refused.current?.status === "RUNNING" &&
      refused.current.lease?.token === this.lease.token
    ) {
      // Our claim was written, its answer lost (an error after the write): claimed after all.
      this.unwritten = undefined;
      await this.onClaimed?.(refused.current);
      return this.write(writer, extra, patch, events);
    }
    if (!refused.ok) this.refused = { current: refused.current };
    return refused;
  }

  /**
   * The lazy claim (the attempt runs long): the claim's write alone, the lease as given. Answers the
   * record written, or the refusal.
   */
  claim(writer: NodeWriter, lease: Lease): Promise<Outcome<NodeRecord>> {
    return this.write(writer, {}, { lease }, () => []);
  }
}

/**
 * Conditions that speak of the claim's lease (its token, its expiry) have nothing to check before
 * the claim: the claim's own condition fences the write. Cancellation is requested only of a RUNNING
 * record, which an unclaimed attempt's node is not.
 */
function unclaimedExtra(extra: Omit<NodeCondition, "status">): Omit<NodeCondition, "status"> {
  const { leaseToken: _token, leaseExpiredBy: _expiry, ...rest } = extra;
  return rest;
}

/**
 * Whether a claim by one of `ways` may still be accepted for the record read (none: never queued).
 * A peek before running an unclaimed attempt, so that a copy of a message whose node is claimed or
 * ended already is handled as a refused claim, without running its handler again.
 */
export function claimable(current: NodeRecord | undefined, ways: readonly ClaimWay[]): boolean {
  return current === undefined || ways.some((way) => matches(current, way.condition));
}

/** Whether a refused write's current record is what `condition` expects (status and attempt). */
function matches(current: NodeRecord | undefined, condition: NodeCondition): boolean {
  if (!current) return false;
  if (!condition.status.includes(current.status)) return false;
  return condition.attempt === undefined || current.attempt === condition.attempt;
}

/** A claimed attempt's lease as its fence; a fence as it is. */
export function fenceOf(fenced: AttemptFence | Lease): AttemptFence {
  return fenced instanceof AttemptFence ? fenced : AttemptFence.held(fenced);
}
