/**
 * The modeled cost of an execution: what the engine's protocol does per transition (ONE table,
 * PROTOCOL, updated whenever the protocol changes; test/bench/cost-model.test.ts compares it with
 * the calls the engine makes), and the list prices applied to the requests it adds up to. A model,
 * not a bill: it applies the protocol's counts to what the records show.
 */
import { PRICE_MODEL, PRICES, STEP_FUNCTIONS_EXPRESS } from "./prices.js";

/**
 * DynamoDB write units, SQS messages, EventBridge events and S3 requests per transition. Write
 * units are per write of an item up to 1 KB (a larger item costs 1 per started KB: `itemBytes`),
 * a transaction 2 per item, as DynamoDB bills them.
 */
export const PROTOCOL = {
  /** Bytes of a record beside its payloads (keys, status, lease, the history events it carries). */
  itemBytes: { node: 500, execution: 600 },
  execution: {
    /** Created RUNNING in one write (a transaction of 2 items with an idempotency key, 3 for a child). */
    createWrites: 1,
    /** It enters the listing index gsi1 (keys only). */
    createIndexWriteUnits: 1,
    /**
     * A start the sweeper looks at first (keyed, a child's, triggered, or an entry not dispatched by
     * its message: engine/executions.ts): it enters the due index gsi2, and leaves it at its end.
     */
    firstLookIndexWriteUnits: 2,
    /** Created PENDING (`start: false`), then started by POST /executions/{id}/trigger: one write. */
    triggerWrites: 1,
    /** With several sinks, each sink's completion is recorded on the execution (one sink ends it). */
    sinkWritesWhenSeveral: 1,
    /** Its end: one write. */
    endWrites: 1,
    /**
     * An end that may leave work behind (not SUCCEEDED, an `any`/`count:N` fan-in, a map holding
     * fan-out budget) stays in the sweeper's index until its cleanup: one more write then.
     */
    cleanupWrites: 1,
    /** "Execution Started" (when it starts) and its end ("Execution Succeeded" / "Failed" / "Cancelled"). */
    events: 2,
  },
  node: {
    /**
     * A node run by a worker: its claim (PENDING or QUEUED → RUNNING) and its completion — but the
     * first attempt of a direct or join node that ends within `claimAfterSeconds` writes no claim of
     * its own: its ending carries it (engine/attempt-fence.ts).
     */
    claimWrites: 1,
    completionWrites: 1,
    /** Each attempt beyond the first: RUNNING → QUEUED with its not-before time, and its message. */
    retryWrites: 1,
    retryMessages: 1,
    /** Dispatched by a write (deferred: a `wait`, an external node; a fan-in decided by arrivals). */
    queueWrites: 1,
    /** A failure for good: the node and its execution's mark in one transaction (2 items × 2). */
    failWriteUnits: 4,
    /** A terminal error (not retryable) keeps its task as a dead letter: one write. */
    deadLetterWrites: 1,
    /** A cancellation: the node write fenced on its execution in one transaction. */
    cancelWriteUnits: 4,
    /** A skip (its `when`, or its only dependency skipped): one write. */
    skipWrites: 1,
    /** An inline node (`merge`): decided and completed in one write, never sent. */
    inlineWrites: 1,
    /** Every node a worker runs needs a message, unless a continuation runs it (below). */
    messages: 1,
  },
  /**
   * Continuation (engine/worker.ts): a node completed by a worker runs its first ready direct child
   * (definition order; else a join it decided just now) in the same invocation, with no message,
   * at most `maxPerMessage` in a row.
   */
  continuation: { maxPerMessage: 16 },
  fanIn: {
    /** Fan-ins of up to this many parents (or met by one completion) are decided by reading. */
    readMaxParents: 4,
    /**
     * A wider `all` fan-in: each parent's arrival is recorded in a shard, one write each (arrivals
     * from one worker invocation share a write, so fewer when parents finish together).
     */
    shardedArrivalWrites: 1,
    /** A wider `count:N`: each parent's outcome recorded on the child. */
    arrivalWrites: 1,
  },
  map: {
    /** Reserving its items against the fan-out budget: a transaction (2 items written). */
    reserveWriteUnits: 4,
    /** Its state (items, lanes, the list in chunks) written on its record. */
    startWrites: 1,
    /** Each item: a claim and a completion (items' records), and its message. */
    itemWrites: 2,
    itemMessages: 1,
    /** Each lane's end recorded as an arrival on the map. */
    laneArrivalWrites: 1,
    /** The last lane sends the map's check, claimed (a write) to assemble the output. */
    checkMessages: 1,
    checkWrites: 1,
    /** The reservation released: two transactions (2 items each). */
    releaseWriteUnits: 8,
  },
  /**
   * Execution variables (engine/vars.ts): a `vars` node, or a node's `assign`, applied once per
   * attempt by reading the execution's variables item (strongly consistent) and writing it back
   * conditionally — 1 write unit per started KB of the item (the document and the record of the
   * nodes that wrote it); more when parallel writers conflict. An expression that mentions `vars`
   * reads it once per evaluation.
   */
  vars: { applyWrites: 1, applyReads: 1 },
  /**
   * Flow control (docs/flow-control.md), when nothing waits: each attempt of a node with concurrency
   * limits takes a slot of each (a read, a look at the queue, a write) and gives it back (a write,
   * then a read and a look for a waiter to hand it to); a start under a workflow's rate limit takes
   * a token (a read and a write). Waiting adds the waiter's place, its item, its node's `waitingFor`
   * and the hand-off: not modeled (it depends on the traffic).
   */
  flowControl: { slotWritesPerLimit: 2, slotReadsPerLimit: 4, startTokenWrites: 1, startTokenReads: 1 },
  /** A value over the inline threshold is written once to S3 (content-addressed, per execution). */
  payloads: { putsPerBlob: 1 },
  /** When the definition asks for node events (`events.nodes`): per attempt and per end. */
  nodeEvents: { perAttemptStarted: 1, perRetry: 1, perEnd: 1 },
  sqs: {
    /** SendMessageBatch carries up to 10 messages; each message is received and deleted once. */
    sendBatch: 10,
  },
  /** Reads, estimated: the execution (eventually consistent) per node run, each input read once. */
  reads: { executionUnitsPerRun: 0.5, unitsPerInputRead: 1, bytesPerReadUnit: 4096 },
} as const;

/** The requests an execution makes (or would make), by service. */
export interface ModeledRequests {
  dynamodb: { writeUnits: number; indexWriteUnits: number; readUnits: number };
  sqs: { messages: number; requests: number };
  lambda: { invocations: number; gbSeconds: number };
  eventbridge: { events: number };
  s3: { puts: number; gets: number };
}

export interface ModeledUsd {
  dynamodb: number;
  sqs: number;
  lambda: number;
  eventbridge: number;
  s3: number;
}

/** The `cost` of an execution: modeled requests by service, their dollars, and the prices used. */
export interface ModeledCost {
  requests: ModeledRequests;
  usd: ModeledUsd;
  totalUsd: number;
  model: string;
}

export function noRequests(): ModeledRequests {
  return {
    dynamodb: { writeUnits: 0, indexWriteUnits: 0, readUnits: 0 },
    sqs: { messages: 0, requests: 0 },
    lambda: { invocations: 0, gbSeconds: 0 },
    eventbridge: { events: 0 },
    s3: { puts: 0, gets: 0 },
  };
}

export function addRequests(into: ModeledRequests, more: ModeledRequests): ModeledRequests {
  into.dynamodb.writeUnits += more.dynamodb.writeUnits;
  into.dynamodb.indexWriteUnits += more.dynamodb.indexWriteUnits;
  into.dynamodb.readUnits += more.dynamodb.readUnits;
  into.sqs.messages += more.sqs.messages;
  into.sqs.requests += more.sqs.requests;
  into.lambda.invocations += more.lambda.invocations;
  into.lambda.gbSeconds += more.lambda.gbSeconds;
  into.eventbridge.events += more.eventbridge.events;
  into.s3.puts += more.s3.puts;
  into.s3.gets += more.s3.gets;
  return into;
}

/** Write units of one write of an item of `bytes` (1 per started KB, at least 1). */
export const itemWriteUnits = (bytes: number): number => Math.max(1, Math.ceil(bytes / 1024));

const million = 1e6;

/** Dollars for people: cents from a dollar up, else three significant digits (a run costs millionths). */
export function formatUsd(usd: number): string {
  if (usd === 0) return "$0";
  return usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toPrecision(3)}`;
}

/** Dollars of the requests at PRICES. Write units include the index write units. */
export function priceRequests(requests: ModeledRequests): ModeledCost {
  const { dynamodb, sqs, lambda, eventbridge, s3 } = requests;
  const usd: ModeledUsd = {
    dynamodb:
      ((dynamodb.writeUnits + dynamodb.indexWriteUnits) * PRICES.dynamoWritePerMillionUnits +
        dynamodb.readUnits * PRICES.dynamoReadPerMillionUnits) /
      million,
    sqs: (sqs.requests * PRICES.sqsPerMillionRequests) / million,
    lambda:
      (lambda.invocations * PRICES.lambdaPerMillionRequests) / million +
      lambda.gbSeconds * PRICES.lambdaPerGbSecondArm64,
    eventbridge: (eventbridge.events * PRICES.eventBridgePerMillionEvents) / million,
    s3: (s3.puts * PRICES.s3PutPerMillionRequests + s3.gets * PRICES.s3GetPerMillionRequests) / million,
  };
  const totalUsd = usd.dynamodb + usd.sqs + usd.lambda + usd.eventbridge + usd.s3;
  return { requests, usd, totalUsd, model: PRICE_MODEL };
}

/** Step Functions Standard for a run of `transitions` state transitions (one per node run). */
export function stepFunctionsStandardUsd(transitions: number): number {
  return (transitions * PRICES.stepFunctionsStandardPerMillionTransitions) / million;
}

/**
 * Step Functions Express for one run of `durationMs` at its smallest memory step: a request and
 * its duration (rounded up to 100 ms).
 */
export function stepFunctionsExpressUsd(durationMs: number): number {
  const e = STEP_FUNCTIONS_EXPRESS;
  const billedMs = Math.max(e.durationStepMs, Math.ceil(durationMs / e.durationStepMs) * e.durationStepMs);
  return e.perMillionRequests / million + (billedMs / 1000) * (e.memoryStepMb / 1024) * e.perGbSecond;
}
