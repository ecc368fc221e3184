/**
 * The deterministic simulation (sim/): the real engine on the in-memory adapters under a seeded
 * scheduler and fake clock, with random DAGs and injected faults (crashes between port calls,
 * zombies, duplicate/reordered/delayed deliveries, transient port errors, cancellations, concurrent
 * sweepers). Every run is checked against the invariants in sim/invariants.ts.
 *
 * Seeds 1–500 here (about 35 s on a shared core); `npm run sim -- --runs 10000` runs a long campaign.
 * Seeds that found engine bugs are kept in regressions.test.ts.
 */
import { describe, expect, it } from "vitest";
import { openFindingOf } from "../../sim/open-findings.js";
import {
  acceptStaleCompletions,
  cancellationsUnwritten,
  carriedClaimsUnconditional,
  caughtFailuresFailTheExecution,
  claimWithTooFewDeps,
  dropFirstBlobPut,
  globalKeys,
  inlineUpTo4K,
  queueTwice,
  retryClaimsUnwritten,
  sameRequestAlways,
  skipsAsCancellations,
  skipsAsCompletions,
  unsequencedHistory,
} from "../../sim/planted.js";
import { zombieHunt } from "../../sim/profile.js";
import { formatResult } from "../../sim/report.js";
import { runWorld, type WorldOptions } from "../../sim/world.js";

const SEEDS = 500;

/** A planted bug's search through up to 200 worlds, each run twice (bugged, then clean). */
const PLANTED_SEARCH_MS = 10 * 60_000;

describe("deterministic simulation", () => {
  it(`violates no invariant over seeds 1–${SEEDS} (open findings aside)`, async () => {
    const failures: string[] = [];
    const totals: Record<string, number> = {};
    const statuses: Record<string, number> = {};
    for (let seed = 1; seed <= SEEDS; seed++) {
      const result = await runWorld({ seed });
      if (result.violations.some((v) => openFindingOf(v) === undefined))
        failures.push(formatResult(result, { traceLines: 20 }));
      for (const [key, value] of Object.entries(result.stats)) totals[key] = (totals[key] ?? 0) + value;
      for (const e of result.executions) statuses[e.status] = (statuses[e.status] ?? 0) + 1;
    }
    expect(failures, failures.join("\n\n")).toEqual([]);
    // The faults were really injected, and every way of ending was reached.
    for (const key of [
      "crashes",
      "stalls",
      "portErrorsBefore",
      "portErrorsAfter",
      "duplicateSends",
      "duplicateReceives",
      "delayedMessages",
      "doubleSweeps",
      "clientRetries",
      // clients reusing keys: a create with another input or start refused (409)
      "keyConflicts",
      // every stored form of a value: inline, blob, a merge of references; inputs in blobs
      "blobs",
      "outputsInline",
      "outputsBlob",
      "outputsParts",
      "inputsBlob",
      // flow control: nodes skipped (by their `when` too), failed under onError "continue",
      // failed with an ExpressionError, completed with {% %} params mapped
      "nodesSkipped",
      "skippedByWhen",
      "nodesContinued",
      "expressionErrors",
      "paramsMapped",
      // failed executions whose onFailure handler ran
      "onFailureRuns",
    ])
      expect(totals[key], key).toBeGreaterThan(0);
    for (const status of ["SUCCEEDED", "FAILED", "CANCELLED"])
      expect(statuses[status], status).toBeGreaterThan(0);
  }, 120_000);

  it("replays a seed identically (a busy one: ~2,900 steps, crashes, zombies, blobs and parts)", async () => {
    const first = await runWorld({ seed: 4040, keepTrace: true });
    const second = await runWorld({ seed: 4040, keepTrace: true });
    expect(first.steps).toBeGreaterThan(1000);
    expect(first.stats.blobs).toBeGreaterThan(0);
    expect(first.stats.outputsParts).toBeGreaterThan(0);
    expect(second.traceHash).toBe(first.traceHash);
    expect(second.trace).toEqual(first.trace);
    expect(second.executions).toEqual(first.executions);
    const other = await runWorld({ seed: 4041 });
    expect(other.traceHash).not.toBe(first.traceHash);
  });

  // The checker must bite: with a bug planted beneath the audit layer, some world must report it,
  // while the same world without the bug is clean. Seeds are searched (not pinned) so that engine
  // changes that reshape the worlds cannot make these tests pass vacuously or fail spuriously.
  /** The first of 200 seeds from `from` whose world the planted bug breaks by `rule`, and not without it. */
  async function firstCaught(
    rule: string,
    options: Omit<WorldOptions, "seed">,
    from = 1,
  ): Promise<number | undefined> {
    for (let seed = from; seed < from + 200; seed++) {
      const bugged = await runWorld({ seed, ...options });
      if (!bugged.violations.some((v) => v.rule === rule)) continue;
      const {
        plant: _bug,
        plantBlobs: _blobBug,
        plantEngine: _engineBug,
        plantEngineStore: _engineStoreBug,
        ...clean
      } = options;
      const result = await runWorld({ seed, ...clean });
      if (result.violations.length === 0) return seed;
    }
    return undefined;
  }

  it("catches a planted bug: a zombie's completion accepted with a stale lease token", async () => {
    const seed = await firstCaught("superseded-write", { adjust: zombieHunt, plant: acceptStaleCompletions });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: a lazy claim carried by an ending accepted whatever the node's state", async () => {
    const seed = await firstCaught("complete-once", { plant: carriedClaimsUnconditional });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: a retry's claim answered as written but never written (its handler runs unclaimed)", async () => {
    const seed = await firstCaught("handler-claimed", { plantEngineStore: retryClaimsUnwritten });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: a child queued twice", async () => {
    const seed = await firstCaught("dispatch-once", { plant: queueTwice });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: an `any`/`count:N` join claimed with fewer dependencies than its fan-in needs", async () => {
    const seed = await firstCaught("fan-in", { plant: claimWithTooFewDeps });
    expect(seed).toBeDefined();
  });

  it(
    "catches a planted bug: a failure a catch edge took fails the execution all the same",
    async () => {
      // A quarter of the workflows have catch edges and fewer see a caught failure: the search starts
      // at the first world that has one (seed 69, still, on this engine), and goes on from there. (Seed
      // 67's bugged world runs a virtual day: 50 s of the suite for nothing.)
      const seed = await firstCaught("caught-failure", { plant: caughtFailuresFailTheExecution }, 69);
      expect(seed).toBeDefined();
    },
    PLANTED_SEARCH_MS,
  );

  it("catches a planted bug: a blob write acknowledged but lost", async () => {
    const seed = await firstCaught("blob", { plantBlobs: dropFirstBlobPut });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: idempotency keys global, not per workflow (a key returns another workflow's execution)", async () => {
    const seed = await firstCaught("idempotency", { plant: globalKeys });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: a reused key with another input or start returns the execution instead of 409", async () => {
    const seed = await firstCaught("idempotency", { plant: sameRequestAlways });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: a skipped node recorded as having run", async () => {
    const seed = await firstCaught("skip", { plant: skipsAsCompletions });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: a skip taken for a cancellation", async () => {
    const seed = await firstCaught("skip", { plant: skipsAsCancellations });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: values kept inline over the world's threshold", async () => {
    const seed = await firstCaught("payload-form", { plantEngine: inlineUpTo4K });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: a node never written, shown CANCELLED at its execution's end with no NodeCancelled", async () => {
    const seed = await firstCaught("node-event", { plant: cancellationsUnwritten });
    expect(seed).toBeDefined();
  });

  it("catches a planted bug: history stamped by time alone, an effect listed before its cause in one millisecond", async () => {
    const seed = await firstCaught("history-causal", { plantEngineStore: unsequencedHistory });
    expect(seed).toBeDefined();
  });
});
