/**
 * The map workload per item, beside Step Functions' Distributed Map for the same work. The row's
 * counts are the workload's (the map's own node and its claim, waiting, check and completion
 * included), divided by its items instead of its nodes: DynamoDB write and read units, SQS requests
 * (sends, receives and deletes, as billed elsewhere in the report), Lambda GB-s and the modeled $.
 *
 * Step Functions, per item (us-east-1 list prices):
 * - Standard child workflows (the comparison): a child execution per item running one Pass state.
 *   Counted as the bench counts every other row, one state transition per item at $0.025 per 1,000
 *   ($25 per million items): a lower bound, since AWS also bills one transition for each child
 *   workflow execution a Distributed Map starts (2 per item with one item per child: $50).
 *   Compared with Standard because a weft item is what a Standard child is: a durable record of its
 *   own with its retries, run once under a fenced lease, no 5-minute limit.
 * - Express child workflows (for reference, not the comparison): $1.00 per million requests plus
 *   duration, at least 100 ms × 64 MB at $0.00001667 per GB-s ($0.104 per million), plus the
 *   parent's one transition per child started ($25 per million): $26.10 per million items with one
 *   item per child. An ItemBatcher divides all three by the batch size, but Express children are
 *   at-least-once, keep no per-item record and stop at 5 minutes.
 */
import { PRICES } from "./cost.js";
import { measuredBackend, modeledCosts, type ResultRow } from "./report.js";

/** Step Functions prices for a Distributed Map (us-east-1), per the module's comment. */
export const DISTRIBUTED_MAP_PRICES = {
  /** Standard: $0.025 per 1,000 state transitions. */
  standardPerMillionTransitions: PRICES.stepFunctionsStandardPerMillionTransitions,
  /** Transitions counted per item (its Pass state): the bench's one per node, a lower bound. */
  standardTransitionsPerItem: 1,
  /** What AWS bills per item with one item per Standard child: the child's start and its Pass state. */
  standardTransitionsPerItemBilled: 2,
  expressPerMillionRequests: 1.0,
  expressPerGbSecond: 0.00001667,
  /** An Express execution's minimum billed duration and memory. */
  expressMinBilledMs: 100,
  expressMinBilledGb: 64 / 1024,
  /** The Distributed Map's transition per child execution it starts, Express children too. */
  childStartTransitions: 1,
} as const;

const P = DISTRIBUTED_MAP_PRICES;

/** $ per million items, Step Functions Standard children (the bench's count: a lower bound). */
export const stepFunctionsStandardPerMillionItems =
  P.standardTransitionsPerItem * P.standardPerMillionTransitions;
/** The same with the transition AWS bills for starting each child. */
export const stepFunctionsStandardBilledPerMillionItems =
  P.standardTransitionsPerItemBilled * P.standardPerMillionTransitions;
/** $ per million items, Step Functions Express children, one item per child. */
export const stepFunctionsExpressPerMillionItems =
  P.expressPerMillionRequests +
  (P.expressMinBilledMs / 1000) * P.expressMinBilledGb * P.expressPerGbSecond * 1e6 +
  P.childStartTransitions * P.standardPerMillionTransitions;

export interface MapPoint {
  workload: string;
  items: number;
  lanes: number;
  /** The backend the counts are from (moto when it ran), and the one Lambda time is from. */
  countedOn: string;
  timedOn: string;
  writeUnits: number;
  readUnits: number;
  sqsRequests: number;
  sqsSendCalls: number;
  sqsReceives: number;
  sqsDeleteCalls: number;
  /** SQS messages sent per item (each item's own, batched per invocation into the send calls above). */
  sqsMessages: number;
  s3Puts: number;
  workerInvocations: number;
  /** Lambda GB-s per item: billed worker duration × 1 GB, on `timedOn` (memory-6ms when it ran). */
  lambdaGbSeconds: number;
  /** $ per million items by the report's model of AWS (counts on `countedOn`, Lambda on memory-6ms). */
  modeled?: number;
  /** $ per million items with Lambda at 6 ms per AWS call summed (counts alone). */
  summed: number;
  stepFunctionsStandard: number;
  stepFunctionsStandardBilled: number;
  stepFunctionsExpress: number;
}

export interface MapComparison {
  points: MapPoint[];
  prices: typeof DISTRIBUTED_MAP_PRICES;
}

/** Per item: the workload's totals over its items (rows of workloads with `mapItems`). */
export function mapComparison(
  results: readonly ResultRow[],
  maps: ReadonlyArray<{
    workload: string;
    items: number;
    lanes: number;
    /** The items each backend ran, where it ran fewer than `items` (moto: bench/main.ts). */
    itemsOn?: Readonly<Record<string, number>>;
  }>,
): MapComparison | undefined {
  const on = measuredBackend(results);
  const modeled = new Map(modeledCosts(results).map((m) => [m.workload, m.total]));
  const points = maps.flatMap(({ workload, items: nominal, lanes, itemsOn }): MapPoint[] => {
    const row = results.find((r) => r.workload === workload && r.backend === on);
    const ran = (backend: string) => itemsOn?.[backend] ?? nominal;
    const items = row ? ran(row.backend) : 0;
    if (!row || items === 0) return [];
    const timed = results.find((r) => r.workload === workload && r.backend === "memory-6ms");
    // Per-node figures are totals over the completed nodes (the map and its items): per item, × nodes
    // / items, the items of the run they are from (moto runs fewer: a 1,000-item run divided by
    // 10,000 items showed a tenth of the cost per item).
    const scale = Math.max(1, row.completedNodes) / items;
    const p = row.perNode;
    const total = modeled.get(workload);
    const billedMs = (timed ?? row).calls.worker.durationsMs.reduce(
      (s, ms) => s + Math.max(1, Math.ceil(ms)),
      0,
    );
    const timedItems = ran((timed ?? row).backend);
    return [
      {
        workload,
        items,
        lanes,
        countedOn: row.backend,
        timedOn: (timed ?? row).backend,
        writeUnits: p.ddbWriteUnits * scale,
        readUnits: p.ddbReadUnits * scale,
        sqsRequests: p.sqsBilledRequests * scale,
        sqsSendCalls: p.sqsSendCalls * scale,
        sqsReceives: p.sqsReceives * scale,
        sqsDeleteCalls: p.sqsDeleteCalls * scale,
        sqsMessages: p.sqsSendEntries * scale,
        s3Puts: p.s3PutRequests * scale,
        workerInvocations: p.workerInvocations * scale,
        lambdaGbSeconds: ((billedMs / 1000) * PRICES.lambdaMemoryGb) / timedItems,
        ...(total === undefined ? {} : { modeled: total * scale }),
        summed: row.cost.totalAtAwsLatency * scale,
        stepFunctionsStandard: stepFunctionsStandardPerMillionItems,
        stepFunctionsStandardBilled: stepFunctionsStandardBilledPerMillionItems,
        stepFunctionsExpress: stepFunctionsExpressPerMillionItems,
      },
    ];
  });
  return points.length === 0 ? undefined : { points, prices: DISTRIBUTED_MAP_PRICES };
}
