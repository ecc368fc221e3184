/**
 * The Store port on one DynamoDB table (key design in keys.ts). Every state change is a single
 * conditional write (UpdateItem, or TransactWriteItems where two items must change together), so
 * the semantics documented in ports.ts hold under any number of concurrent writers:
 *
 * - a missing node item is PENDING at attempt 0: node conditions are written so that a missing item
 *   satisfies exactly what `pendingNode(...)` would, and a write allowed from PENDING creates it;
 * - a history event is appended to the `history` list of the item being written, in that same write;
 * - a refused write returns the item as it was (ReturnValuesOnConditionCheckFailure = ALL_OLD, with a
 *   consistent read as fallback for emulators that do not return it).
 *
 * Build the document client with `documentClient(...)`: records and events carry optional fields
 * that may be present but undefined (removeUndefinedValues), and JSON numbers are doubles of any
 * magnitude (allowImpreciseNumbers, and numbers read back as doubles rather than BigInts).
 */
import type { AttributeValue, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import {
  type DeadLetterRecord,
  type ExecutionRecord,
  type ExecutionStatus,
  type HistoryEvent,
  type NodeRecord,
  type NodeStatus,
  pendingNode,
  type WorkflowVersionRecord,
} from "../../domain/records.js";
import type {
  ArrivalRequest,
  ArrivalResult,
  ArrivalShard,
  ExecutionGuard,
  ExecutionPatch,
  ExecutionQuery,
  NodeCondition,
  NodePatch,
  Outcome,
  Page,
  ShardArrivalRequest,
  Store,
} from "../../ports.js";
import {
  DEAD_LETTER_RECORD_ATTRIBUTES,
  deadLetterFromItem,
  deadLetterToItem,
  EXECUTION_RECORD_ATTRIBUTES,
  executionFromItem,
  executionToItem,
  historyFromItem,
  type Item,
  nodeFromItem,
  sortHistory,
  toNumberArray,
  workflowVersionFromItem,
  workflowVersionToItem,
} from "./codec.js";
import {
  ATTR,
  allListingPk,
  arrivalShardKey,
  DEAD_LETTER_PK,
  DUE_SHARDS,
  deadLetterKey,
  dueKeys,
  duePk,
  dueUpperBound,
  executionIdFromPk,
  executionKey,
  executionPk,
  FINAL_EXECUTION_STATUSES,
  INDEX,
  idempotencyKey,
  type Key,
  LISTING_SHARDS,
  leaseKey,
  NODE_PREFIX,
  nodeKey,
  shardFromSk,
  workflowHashKey,
  workflowHeadKey,
  workflowListingPk,
  workflowVersionKey,
} from "./keys.js";

const NODE_RECORD_ATTRIBUTES = [
  ATTR.pk,
  ATTR.sk,
  "status",
  "attempt",
  "okDeps",
  "badDeps",
  "lease",
  "notBefore",
  "output",
  "error",
  "queuedAt",
  "startedAt",
  "finishedAt",
  "cancelRequested",
] as const;

const BATCH_GET_LIMIT = 100;
const MAX_BATCH_RETRIES = 8;
const MAX_TRANSACTION_RETRIES = 5;

/** Collects placeholders for one expression-based request. */
class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private counter = 0;

  /** `#name` for an attribute name (all names weft uses are plain identifiers). */
  name(attribute: string): string {
    const placeholder = `#${attribute}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:v${this.counter++}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  /** ExpressionAttributeValues, omitted when empty (DynamoDB refuses an empty map). */
  get valuesOrUndefined(): Record<string, unknown> | undefined {
    return Object.keys(this.values).length > 0 ? this.values : undefined;
  }

  appendHistory(events: HistoryEvent | readonly HistoryEvent[]): string {
    const history = this.name(ATTR.history);
    const list = Array.isArray(events) ? [...events] : [events];
    return `${history} = list_append(if_not_exists(${history}, ${this.value([])}), ${this.value(list)})`;
  }

  projection(attributes: readonly string[]): string {
    return attributes.map((attribute) => this.name(attribute)).join(", ");
  }
}

function updateExpression(sets: string[], removes: string[], adds: string[] = []): string {
  const parts: string[] = [];
  if (sets.length > 0) parts.push(`SET ${sets.join(", ")}`);
  if (removes.length > 0) parts.push(`REMOVE ${removes.join(", ")}`);
  if (adds.length > 0) parts.push(`ADD ${adds.join(", ")}`);
  return parts.join(" ");
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "";
}

function isConditionFailure(error: unknown): error is Error & { Item?: Record<string, AttributeValue> } {
  return errorName(error) === "ConditionalCheckFailedException";
}

type CancellationReasons = Array<{ Code?: string } | undefined>;

function cancellationReasons(error: unknown): CancellationReasons | undefined {
  if (errorName(error) !== "TransactionCanceledException") return undefined;
  return (error as { CancellationReasons?: CancellationReasons }).CancellationReasons ?? [];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Outputs and inputs are JSON, whose numbers are doubles: write any finite double (not only safe
 * integers) and read every number back as a double (never a BigInt, which JSON cannot carry).
 * DynamoDB itself still refuses magnitudes above 9.9e125 or below 1e-130.
 */
const unmarshallOptions = () => ({ wrapNumbers: (value: string) => Number(value) });

/** The document client the store expects (see the module comment). */
export function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false, allowImpreciseNumbers: true },
    // A fresh object: lib-dynamodb writes into the options it is given.
    unmarshallOptions: unmarshallOptions(),
  });
}

/** listDueExecutions' read state of one due-index shard. */
interface DueShard {
  pk: string;
  /** Entries read but not yet taken, ascending. */
  buffer: Array<{ sortKey: string; executionId: string }>;
  startKey: Record<string, unknown> | undefined;
  exhausted: boolean;
}

/** Cursor of listExecutions: per listing shard, where the previous page stopped. */
interface ListingCursor {
  /** Per shard: "" = not started, a sort key = continue below it, null = exhausted. */
  p: Array<string | null>;
}

export interface DynamoStoreOptions {
  /**
   * Finished executions and their nodes are deleted by DynamoDB's TTL this long after they finish
   * (never used as a timer: TTL deletes "within about two days"). Unset: kept forever.
   */
  retentionDays?: number;
}

const FINAL_NODE_STATUSES: readonly NodeStatus[] = ["COMPLETED", "FAILED", "CANCELLED"];

export class DynamoStore implements Store {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly options: DynamoStoreOptions = {},
  ) {}

  /** The TTL update for a write that moves an item to `status`, finishing at `finishedAt`. */
  private retention(
    e: Expression,
    final: boolean | undefined,
    finishedAt: number | null | undefined,
    sets: string[],
    removes: string[],
  ): void {
    const days = this.options.retentionDays;
    if (days === undefined || final === undefined) return;
    if (final && typeof finishedAt === "number") {
      sets.push(`${e.name(ATTR.ttl)} = ${e.value(Math.ceil(finishedAt / 1000) + days * 86_400)}`);
    } else if (!final) removes.push(e.name(ATTR.ttl)); // revived by a redrive: keep it again
  }

  // ── workflows ─────────────────────────────────────────────────────────────────────────────────

  async getWorkflowVersion(name: string, version?: number): Promise<WorkflowVersionRecord | undefined> {
    if (version !== undefined) {
      if (!Number.isSafeInteger(version) || version < 1) return undefined;
      const item = await this.get(workflowVersionKey(name, version));
      return item && workflowVersionFromItem(item);
    }
    const head = workflowHeadKey(name);
    const result = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :prefix)",
        ExpressionAttributeNames: { "#pk": ATTR.pk, "#sk": ATTR.sk },
        ExpressionAttributeValues: { ":pk": head.pk, ":prefix": "V#" },
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
      }),
    );
    const item = result.Items?.[0];
    return item && workflowVersionFromItem(item);
  }

  async findWorkflowVersionByHash(name: string, definitionHash: string): Promise<number | undefined> {
    const item = await this.get(workflowHashKey(name, definitionHash));
    return item === undefined ? undefined : Number(item.version);
  }

  async putWorkflowVersion(record: WorkflowVersionRecord): Promise<"created" | "conflict"> {
    if (!Number.isSafeInteger(record.version) || record.version < 1) return "conflict";
    const head = workflowHeadKey(record.name);
    const headWrite: NonNullable<TransactWriteCommandInput["TransactItems"]>[number] =
      record.version === 1
        ? {
            Put: {
              TableName: this.tableName,
              Item: { ...head, name: record.name, latestVersion: 1 },
              ConditionExpression: "attribute_not_exists(#pk)",
              ExpressionAttributeNames: { "#pk": ATTR.pk },
            },
          }
        : {
            Update: {
              TableName: this.tableName,
              Key: head,
              UpdateExpression: "SET #latest = :version",
              ConditionExpression: "#latest = :previous",
              ExpressionAttributeNames: { "#latest": "latestVersion" },
              ExpressionAttributeValues: { ":version": record.version, ":previous": record.version - 1 },
            },
          };
    const result = await this.transact({
      TransactItems: [
        headWrite,
        {
          Put: {
            TableName: this.tableName,
            Item: workflowVersionToItem(record),
            ConditionExpression: "attribute_not_exists(#pk)",
            ExpressionAttributeNames: { "#pk": ATTR.pk },
          },
        },
        {
          Put: {
            TableName: this.tableName,
            Item: { ...workflowHashKey(record.name, record.definitionHash), version: record.version },
            ConditionExpression: "attribute_not_exists(#pk)",
            ExpressionAttributeNames: { "#pk": ATTR.pk },
          },
        },
      ],
    });
    return result === "ok" ? "created" : "conflict";
  }

  // ── executions ────────────────────────────────────────────────────────────────────────────────

  async createExecution(
    record: ExecutionRecord,
    event: HistoryEvent,
  ): Promise<{ created: true } | { created: false; existing: ExecutionRecord }> {
    const item = executionToItem(record, [event]);
    const put = {
      TableName: this.tableName,
      Item: item,
      ConditionExpression: "attribute_not_exists(#pk)",
      ExpressionAttributeNames: { "#pk": ATTR.pk },
    };
    if (record.idempotencyKey === undefined) {
      try {
        await this.doc.send(new PutCommand(put));
        return { created: true };
      } catch (error) {
        if (isConditionFailure(error)) throw new Error(`execution ${record.executionId} already exists`);
        throw error;
      }
    }
    const idemKey = idempotencyKey(record.idempotencyKey);
    const result = await this.transact({
      TransactItems: [
        {
          Put: {
            TableName: this.tableName,
            Item: { ...idemKey, executionId: record.executionId, createdAt: record.createdAt },
            ConditionExpression: "attribute_not_exists(#pk)",
            ExpressionAttributeNames: { "#pk": ATTR.pk },
          },
        },
        { Put: put },
      ],
    });
    if (result === "ok") return { created: true };
    if (result[0]?.Code === "ConditionalCheckFailed") {
      const idem = await this.get(idemKey);
      const existing = idem && (await this.getExecution(idem.executionId as string));
      if (!existing) {
        throw new Error(`idempotency key ${record.idempotencyKey} refers to a missing execution`);
      }
      return { created: false, existing };
    }
    throw new Error(`execution ${record.executionId} already exists`);
  }

  async getExecution(executionId: string): Promise<ExecutionRecord | undefined> {
    const item = await this.get(executionKey(executionId), EXECUTION_RECORD_ATTRIBUTES);
    return item && executionFromItem(item);
  }

  async transitionExecution(
    executionId: string,
    from: readonly ExecutionStatus[],
    patch: ExecutionPatch,
    event?: HistoryEvent,
    guard: ExecutionGuard = {},
  ): Promise<Outcome<ExecutionRecord>> {
    const e = new Expression();
    const status = e.name("status");
    const statusCondition =
      from.length === 0
        ? `attribute_exists(${e.name(ATTR.pk)}) AND attribute_not_exists(${e.name(ATTR.pk)})`
        : `${status} IN (${from.map((s) => e.value(s)).join(", ")})`;
    const condition = guard.noFailedNode
      ? `${statusCondition} AND attribute_not_exists(${e.name("failedNode")})`
      : statusCondition;
    const sets: string[] = [];
    const removes: string[] = [];
    const finishing = patch.status !== undefined && FINAL_EXECUTION_STATUSES.includes(patch.status);
    for (const [field, value] of Object.entries(patch)) {
      if (field === "sweepAt") continue;
      // `input` is arbitrary JSON (null is a value); null removes any other field.
      if (value === null && field !== "input") removes.push(e.name(field));
      else if (value !== undefined) sets.push(`${e.name(field)} = ${e.value(value)}`);
    }
    // sweepAt and the due-index keys change together; a finished execution leaves the index unless
    // the same write keeps a sweepAt (its cleanup is still to be confirmed by the sweeper).
    const dueAttributes = ["sweepAt", ATTR.gsi2pk, ATTR.gsi2sk];
    if (patch.sweepAt === null || (finishing && patch.sweepAt === undefined)) {
      removes.push(...dueAttributes.map((name) => e.name(name)));
    } else if (patch.sweepAt !== undefined) {
      const keys = dueKeys(executionId, patch.sweepAt);
      sets.push(`${e.name("sweepAt")} = ${e.value(patch.sweepAt)}`);
      for (const [name, value] of Object.entries(keys)) sets.push(`${e.name(name)} = ${e.value(value)}`);
    }
    this.retention(e, patch.status === undefined ? undefined : finishing, patch.finishedAt, sets, removes);
    if (event) sets.push(e.appendHistory(event));
    if (sets.length === 0 && removes.length === 0) sets.push(`${status} = ${status}`);
    const key = executionKey(executionId);
    const item = await this.conditionalUpdate(key, e, condition, updateExpression(sets, removes));
    if (item.ok) return { ok: true, record: executionFromItem(item.item) };
    return { ok: false, current: item.current && executionFromItem(item.current) };
  }

  async recordSinkDone(executionId: string, sinkIndex: number): Promise<Outcome<ExecutionRecord>> {
    const e = new Expression();
    const sinks = e.name("sinksDone");
    const condition = `${e.name("status")} = ${e.value("RUNNING")} AND NOT contains(${sinks}, ${e.value(sinkIndex)})`;
    const update = updateExpression([], [], [`${sinks} ${e.value(new Set([sinkIndex]))}`]);
    const result = await this.conditionalUpdate(executionKey(executionId), e, condition, update);
    if (result.ok) return { ok: true, record: executionFromItem(result.item) };
    return { ok: false, current: result.current && executionFromItem(result.current) };
  }

  async listExecutions(query: ExecutionQuery): Promise<Page<ExecutionRecord>> {
    const limit = Math.max(1, Math.floor(query.limit));
    const partitions =
      query.workflow !== undefined
        ? [
            {
              index: INDEX.byWorkflow,
              pkName: ATTR.gsi1pk,
              skName: ATTR.gsi1sk,
              pk: workflowListingPk(query.workflow),
            },
          ]
        : Array.from({ length: LISTING_SHARDS }, (_, shard) => ({
            index: INDEX.all,
            pkName: ATTR.gsi3pk,
            skName: ATTR.gsi3sk,
            pk: allListingPk(shard),
          }));
    const positions = decodeCursor(query.next, partitions.length);

    // Read up to `limit` matching entries from every partition not yet exhausted, newest first.
    const fetched = await Promise.all(
      partitions.map(async (partition, i) => {
        const position = positions[i];
        if (position === null || position === undefined) return { entries: [], exhausted: true };
        return this.readListingPartition(partition, position, limit, query.status);
      }),
    );

    // Merge newest first and take one page.
    const merged = fetched
      .flatMap((result, partition) => result.entries.map((entry) => ({ ...entry, partition })))
      .sort((a, b) => (a.sortKey < b.sortKey ? 1 : a.sortKey > b.sortKey ? -1 : 0))
      .slice(0, limit);

    const nextPositions = positions.map((position, i) => {
      if (position === null) return null;
      const taken = merged.filter((entry) => entry.partition === i);
      const result = fetched[i]!;
      if (result.exhausted && taken.length === result.entries.length) return null;
      return taken.length > 0 ? taken[taken.length - 1]!.sortKey : (position ?? "");
    });

    const items = merged.map((entry) => entry.record);
    const more = nextPositions.some((position) => position !== null);
    return more ? { items, next: encodeCursor({ p: nextPositions }) } : { items };
  }

  // ── nodes ─────────────────────────────────────────────────────────────────────────────────────

  async getNode(executionId: string, nodeId: string): Promise<NodeRecord | undefined> {
    const item = await this.get(nodeKey(executionId, nodeId), NODE_RECORD_ATTRIBUTES);
    return item && nodeFromItem(item);
  }

  async getNodes(executionId: string, nodeIds: readonly string[]): Promise<NodeRecord[]> {
    const unique = [...new Set(nodeIds)];
    const items = await this.batchGet(
      unique.map((nodeId) => nodeKey(executionId, nodeId)),
      NODE_RECORD_ATTRIBUTES,
    );
    const byId = new Map(items.map((item) => [item[ATTR.sk] as string, nodeFromItem(item)]));
    return unique.flatMap((nodeId) => {
      const record = byId.get(`${NODE_PREFIX}${nodeId}`);
      return record ? [record] : [];
    });
  }

  async listNodes(executionId: string): Promise<NodeRecord[]> {
    const e = new Expression();
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(executionPk(executionId))} AND begins_with(${e.name(ATTR.sk)}, ${e.value(NODE_PREFIX)})`,
      ProjectionExpression: e.projection(NODE_RECORD_ATTRIBUTES),
      ExpressionAttributeNames: e.names,
      ExpressionAttributeValues: e.values,
      ConsistentRead: true,
    });
    return items.map(nodeFromItem);
  }

  async transitionNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
  ): Promise<Outcome<NodeRecord>> {
    const write = this.nodeWrite(executionId, nodeId, condition, patch, event);
    const result = await this.conditionalUpdate(write.key, write.e, write.condition, write.update);
    if (result.ok) return { ok: true, record: nodeFromItem(result.item) };
    return { ok: false, current: result.current && nodeFromItem(result.current) };
  }

  async failNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent,
  ): Promise<Outcome<NodeRecord>> {
    const node = this.nodeWrite(executionId, nodeId, condition, patch, event);
    const x = new Expression();
    const failedNode = x.name("failedNode");
    const outcome = await this.transact({
      TransactItems: [
        {
          Update: {
            TableName: this.tableName,
            Key: node.key,
            ConditionExpression: node.condition,
            UpdateExpression: node.update,
            ExpressionAttributeNames: node.e.names,
            ExpressionAttributeValues: node.e.valuesOrUndefined,
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: executionKey(executionId),
            ConditionExpression: `${x.name("status")} = ${x.value("RUNNING")}`,
            UpdateExpression: `SET ${failedNode} = if_not_exists(${failedNode}, ${x.value(nodeId)})`,
            ExpressionAttributeNames: x.names,
            ExpressionAttributeValues: x.values,
          },
        },
      ],
    });
    if (outcome === "ok") {
      const item = await this.get(node.key);
      return { ok: true, record: nodeFromItem(item ?? {}) };
    }
    if (outcome[0]?.Code === "ConditionalCheckFailed") {
      const current = await this.get(node.key);
      return { ok: false, current: current && nodeFromItem(current) };
    }
    // Only the execution's condition failed: it is not RUNNING, so the node fails alone.
    return this.transitionNode(executionId, nodeId, condition, patch, event);
  }

  /** The conditional UpdateItem of a node write, built but not sent (a transaction may carry it). */
  private nodeWrite(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
  ): { key: Key; e: Expression; condition: string; update: string } {
    const e = new Expression();
    const status = e.name("status");
    const attempt = e.name("attempt");
    const conditions: string[] = [];

    if (condition.status.length === 0) {
      conditions.push(`attribute_exists(${e.name(ATTR.pk)}) AND attribute_not_exists(${e.name(ATTR.pk)})`);
    } else {
      const inList = `${status} IN (${condition.status.map((s) => e.value(s)).join(", ")})`;
      // A missing item (or one that never got a status) is PENDING.
      conditions.push(
        condition.status.includes("PENDING") ? `(attribute_not_exists(${status}) OR ${inList})` : inList,
      );
    }
    if (condition.leaseToken !== undefined) {
      conditions.push(`${e.name("lease")}.${e.name("token")} = ${e.value(condition.leaseToken)}`);
    }
    if (condition.attempt !== undefined) {
      const equals = `${attempt} = ${e.value(condition.attempt)}`;
      conditions.push(condition.attempt === 0 ? `(attribute_not_exists(${attempt}) OR ${equals})` : equals);
    }
    if (condition.dueBy !== undefined) {
      const notBefore = e.name("notBefore");
      conditions.push(`(attribute_not_exists(${notBefore}) OR ${notBefore} <= ${e.value(condition.dueBy)})`);
    }
    if (condition.notCancelRequested) {
      const requested = e.name("cancelRequested");
      conditions.push(`(attribute_not_exists(${requested}) OR ${requested} = ${e.value(false)})`);
    }
    if (condition.leaseExpiredBy !== undefined) {
      // No lease → refused, as for a PENDING record.
      conditions.push(`${e.name("lease")}.${e.name("expiresAt")} < ${e.value(condition.leaseExpiredBy)}`);
    }

    const sets: string[] = [];
    const removes: string[] = [];
    sets.push(
      patch.status !== undefined
        ? `${status} = ${e.value(patch.status)}`
        : `${status} = if_not_exists(${status}, ${e.value("PENDING")})`,
    );
    sets.push(
      patch.attempt !== undefined
        ? `${attempt} = ${e.value(patch.attempt)}`
        : `${attempt} = if_not_exists(${attempt}, ${e.value(0)})`,
    );
    // Fields whose type allows null: null removes them.
    for (const field of ["lease", "notBefore", "error", "startedAt", "finishedAt"] as const) {
      const value = patch[field];
      if (value === null) removes.push(e.name(field));
      else if (value !== undefined) sets.push(`${e.name(field)} = ${e.value(value)}`);
    }
    // A number set, which DynamoDB cannot store empty.
    if (patch.okDeps !== undefined) {
      if (patch.okDeps.length === 0) removes.push(e.name("okDeps"));
      else sets.push(`${e.name("okDeps")} = ${e.value(new Set(patch.okDeps))}`);
    }
    // Only null is allowed: forget the failed arrivals.
    if (patch.badDeps === null) removes.push(e.name("badDeps"));
    // `output` is arbitrary JSON: null is a value like any other; undefined leaves it alone.
    if (patch.output !== undefined) sets.push(`${e.name("output")} = ${e.value(patch.output)}`);
    for (const field of ["queuedAt", "cancelRequested"] as const) {
      const value = patch[field];
      if (value !== undefined) sets.push(`${e.name(field)} = ${e.value(value)}`);
    }
    const final = patch.status === undefined ? undefined : FINAL_NODE_STATUSES.includes(patch.status);
    this.retention(e, final, patch.finishedAt, sets, removes);
    if (event) sets.push(e.appendHistory(event));

    return {
      key: nodeKey(executionId, nodeId),
      e,
      condition: conditions.join(" AND "),
      update: updateExpression(sets, removes),
    };
  }

  async recordArrival(request: ArrivalRequest): Promise<ArrivalResult> {
    const { executionId, childId, parentIndex } = request;
    const e = new Expression();
    const status = e.name("status");
    const attempt = e.name("attempt");
    const okDeps = e.name("okDeps");
    const badDeps = e.name("badDeps");
    const pending = e.value("PENDING");
    const parent = e.value(parentIndex);
    const condition =
      `(attribute_not_exists(${e.name(ATTR.pk)}) OR ${status} = ${pending})` +
      ` AND NOT contains(${okDeps}, ${parent}) AND NOT contains(${badDeps}, ${parent})`;

    const queue = request.readyOnArrival && request.outcome === "ok";
    const sets = queue
      ? [
          `${status} = ${e.value("QUEUED")}`,
          `${attempt} = ${e.value(1)}`,
          `${e.name("queuedAt")} = ${e.value(request.now)}`,
          ...(request.notBefore !== undefined
            ? [`${e.name("notBefore")} = ${e.value(request.notBefore)}`]
            : []),
          ...(request.event ? [e.appendHistory(request.event)] : []),
        ]
      : [
          `${status} = if_not_exists(${status}, ${pending})`,
          `${attempt} = if_not_exists(${attempt}, ${e.value(0)})`,
        ];
    const adds = [`${request.outcome === "ok" ? okDeps : badDeps} ${e.value(new Set([parentIndex]))}`];

    const result = await this.conditionalUpdate(
      nodeKey(executionId, childId),
      e,
      condition,
      updateExpression(sets, [], adds),
    );
    if (result.ok) return { recorded: true, node: nodeFromItem(result.item) };
    return {
      recorded: false,
      node: result.current ? nodeFromItem(result.current) : pendingNode(executionId, childId),
    };
  }

  async recordShardArrival(
    request: ShardArrivalRequest,
  ): Promise<{ recorded: number[]; shard: ArrivalShard }> {
    const parents = [...new Set(request.parentIndexes)];
    const e = new Expression();
    const sets: string[] = [];
    const days = this.options.retentionDays;
    if (days !== undefined) {
      sets.push(`${e.name(ATTR.ttl)} = ${e.value(Math.ceil(request.now / 1000) + days * 86_400)}`);
    }
    // Adding to a set is idempotent, so no condition: the old set tells which parents are new.
    const result = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: arrivalShardKey(request.executionId, request.childId, request.shard),
        UpdateExpression: updateExpression(sets, [], [`${e.name("okDeps")} ${e.value(new Set(parents))}`]),
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.valuesOrUndefined,
        ReturnValues: "ALL_OLD",
      }),
    );
    const before = toNumberArray(result.Attributes?.okDeps);
    const recorded = parents.filter((p) => !before.includes(p)).sort((a, b) => a - b);
    const okDeps = [...before, ...recorded].sort((a, b) => a - b);
    return { recorded, shard: { shard: request.shard, okDeps } };
  }

  async getArrivalShards(
    executionId: string,
    childId: string,
    shards: readonly number[],
  ): Promise<ArrivalShard[]> {
    const unique = [...new Set(shards)];
    const items = await this.batchGet(
      unique.map((shard) => arrivalShardKey(executionId, childId, shard)),
      [ATTR.sk, "okDeps"],
    );
    return items
      .map((item) => ({ shard: shardFromSk(item[ATTR.sk] as string), okDeps: toNumberArray(item.okDeps) }))
      .sort((a, b) => a.shard - b.shard);
  }

  // ── history ───────────────────────────────────────────────────────────────────────────────────

  async listHistory(executionId: string): Promise<HistoryEvent[]> {
    const e = new Expression();
    // The execution item (sk "EX") sorts before the node items ("N#…"): execution events come first.
    const items = await this.queryAll({
      TableName: this.tableName,
      KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(executionPk(executionId))}`,
      ProjectionExpression: e.projection([ATTR.sk, ATTR.history]),
      ExpressionAttributeNames: e.names,
      ExpressionAttributeValues: e.values,
      ConsistentRead: true,
    });
    return sortHistory(items.flatMap(historyFromItem));
  }

  // ── sweeping ──────────────────────────────────────────────────────────────────────────────────

  async listDueExecutions(now: number, limit: number): Promise<ExecutionRecord[]> {
    const wanted = Math.floor(limit);
    if (!(wanted > 0)) return [];
    const bound = dueUpperBound(now);
    const shards: DueShard[] = Array.from({ length: DUE_SHARDS }, (_, shard) => ({
      pk: duePk(shard),
      buffer: [],
      startKey: undefined,
      exhausted: false,
    }));
    const found = new Map<string, ExecutionRecord>();
    const seen = new Set<string>();
    // Rounds of a k-way merge: with every shard holding at least `need` entries (or exhausted),
    // the earliest `need` entries overall are buffered. Entries the records contradict (the index
    // lags behind the table) are dropped and the next round reads further.
    for (;;) {
      const need = wanted - found.size;
      if (need <= 0) break;
      await Promise.all(shards.map((shard) => this.fillDueShard(shard, bound, need)));
      const taken = shards
        .flatMap((shard) => shard.buffer.map((entry) => ({ entry, shard })))
        .sort((a, b) => (a.entry.sortKey < b.entry.sortKey ? -1 : a.entry.sortKey > b.entry.sortKey ? 1 : 0))
        .slice(0, need);
      if (taken.length === 0) break;
      for (const { entry, shard } of taken) shard.buffer.splice(shard.buffer.indexOf(entry), 1);
      const ids = [...new Set(taken.map(({ entry }) => entry.executionId))].filter((id) => !seen.has(id));
      for (const id of ids) seen.add(id);
      const items = await this.batchGet(
        ids.map((id) => executionKey(id)),
        EXECUTION_RECORD_ATTRIBUTES,
      );
      for (const item of items) {
        const record = executionFromItem(item);
        if (record.status !== "PENDING" && record.sweepAt !== undefined && record.sweepAt <= now) {
          found.set(record.executionId, record);
        }
      }
    }
    return [...found.values()]
      .sort(
        (a, b) =>
          a.sweepAt! - b.sweepAt! ||
          (a.executionId < b.executionId ? -1 : a.executionId > b.executionId ? 1 : 0),
      )
      .slice(0, wanted);
  }

  async pullSweepAt(executionId: string, at: number): Promise<boolean> {
    const e = new Expression();
    const sweepAt = e.name("sweepAt");
    const value = e.value(at);
    const condition =
      `${e.name("status")} = ${e.value("RUNNING")}` +
      ` AND (attribute_not_exists(${sweepAt}) OR ${sweepAt} > ${value})`;
    const sets = [`${sweepAt} = ${value}`];
    for (const [name, key] of Object.entries(dueKeys(executionId, at))) {
      sets.push(`${e.name(name)} = ${e.value(key)}`);
    }
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: executionKey(executionId),
          ConditionExpression: condition,
          UpdateExpression: updateExpression(sets, []),
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  async acquireLease(name: string, owner: string, now: number, expiresAt: number): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...leaseKey(name), owner, expiresAt },
          ConditionExpression: "attribute_not_exists(#pk) OR #owner = :owner OR #expiresAt <= :now",
          ExpressionAttributeNames: { "#pk": ATTR.pk, "#owner": "owner", "#expiresAt": "expiresAt" },
          ExpressionAttributeValues: { ":owner": owner, ":now": now },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  // ── dead letters ──────────────────────────────────────────────────────────────────────────────

  async putDeadLetter(record: DeadLetterRecord): Promise<void> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: deadLetterToItem(record),
          ConditionExpression: "attribute_not_exists(#pk)",
          ExpressionAttributeNames: { "#pk": ATTR.pk },
        }),
      );
    } catch (error) {
      // Already recorded: a repeat changes nothing.
      if (!isConditionFailure(error)) throw error;
    }
  }

  async listDeadLetters(page: { limit: number; next?: string }): Promise<Page<DeadLetterRecord>> {
    const limit = Math.floor(page.limit);
    if (!(limit > 0)) return { items: [] };
    // Read one more than a page: `next` only when more follow (as the in-memory store answers).
    const items: Item[] = [];
    let startKey: Record<string, unknown> | undefined =
      page.next === undefined ? undefined : { ...deadLetterKey(page.next) };
    let more = false;
    for (;;) {
      const e = new Expression();
      const result = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(DEAD_LETTER_PK)}`,
          ProjectionExpression: e.projection(DEAD_LETTER_RECORD_ATTRIBUTES),
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
          ScanIndexForward: true,
          ConsistentRead: true,
          Limit: limit + 1 - items.length,
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(result.Items ?? []));
      startKey = result.LastEvaluatedKey;
      if (items.length > limit) {
        more = true;
        break;
      }
      if (!startKey) break;
    }
    const records = items.slice(0, limit).map(deadLetterFromItem);
    const last = records.at(-1);
    return more && last ? { items: records, next: last.id } : { items: records };
  }

  async getDeadLetter(id: string): Promise<DeadLetterRecord | undefined> {
    const item = await this.get(deadLetterKey(id), DEAD_LETTER_RECORD_ATTRIBUTES);
    return item && deadLetterFromItem(item);
  }

  async deleteDeadLetter(id: string): Promise<boolean> {
    const result = await this.doc.send(
      new DeleteCommand({ TableName: this.tableName, Key: deadLetterKey(id), ReturnValues: "ALL_OLD" }),
    );
    return result.Attributes !== undefined;
  }

  // ── helpers ───────────────────────────────────────────────────────────────────────────────────

  private async get(key: Key, attributes?: readonly string[]): Promise<Item | undefined> {
    const e = new Expression();
    const projection = attributes && e.projection(attributes);
    const result = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: key,
        ConsistentRead: true,
        ProjectionExpression: projection,
        ExpressionAttributeNames: projection ? e.names : undefined,
      }),
    );
    return result.Item;
  }

  /** One conditional UpdateItem returning the new item, or the item as found when refused. */
  private async conditionalUpdate(
    key: Key,
    e: Expression,
    condition: string,
    update: string,
  ): Promise<{ ok: true; item: Item } | { ok: false; current: Item | undefined }> {
    try {
      const result = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          ConditionExpression: condition,
          UpdateExpression: update,
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.valuesOrUndefined,
          ReturnValues: "ALL_NEW",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return { ok: true, item: result.Attributes ?? {} };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      // ALL_OLD gives the item that failed the condition; without it (missing item, or an emulator
      // that does not return it) read it.
      const current = error.Item
        ? (unmarshall(error.Item, unmarshallOptions()) as Item)
        : await this.get(key);
      return { ok: false, current };
    }
  }

  /** A transaction, retried on TransactionConflict; "ok" or the cancellation reasons. */
  private async transact(input: TransactWriteCommandInput): Promise<"ok" | CancellationReasons> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.doc.send(new TransactWriteCommand(input));
        return "ok";
      } catch (error) {
        const reasons = cancellationReasons(error);
        if (!reasons) throw error;
        const conflict = reasons.some((reason) => reason?.Code === "TransactionConflict");
        const failed = reasons.some((reason) => reason?.Code === "ConditionalCheckFailed");
        if (failed || !conflict || attempt >= MAX_TRANSACTION_RETRIES) {
          if (!failed) throw error;
          return reasons;
        }
        await sleep(20 * 2 ** attempt * Math.random());
      }
    }
  }

  private async queryAll(input: QueryCommandInput): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.doc.send(new QueryCommand({ ...input, ExclusiveStartKey: startKey }));
      items.push(...(result.Items ?? []));
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  /** BatchGetItem in chunks of 100, retrying unprocessed keys with backoff. Order is not kept. */
  private async batchGet(
    keys: readonly Key[],
    attributes: readonly string[],
    consistent = true,
  ): Promise<Item[]> {
    const items: Item[] = [];
    for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
      let pending: Record<string, unknown>[] = keys
        .slice(start, start + BATCH_GET_LIMIT)
        .map((key) => ({ ...key }));
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > MAX_BATCH_RETRIES)
          throw new Error(`BatchGetItem left ${pending.length} keys unprocessed`);
        if (attempt > 0) await sleep(Math.min(1000, 25 * 2 ** attempt) * Math.random());
        const e = new Expression();
        const projection = e.projection(attributes);
        const result = await this.doc.send(
          new BatchGetCommand({
            RequestItems: {
              [this.tableName]: {
                Keys: pending,
                ConsistentRead: consistent,
                ProjectionExpression: projection,
                ExpressionAttributeNames: e.names,
              },
            },
          }),
        );
        items.push(...(result.Responses?.[this.tableName] ?? []));
        pending = result.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      }
    }
    return items;
  }

  /** Reads due-index entries of one shard (ascending, up to `bound`) until `need` are buffered. */
  private async fillDueShard(shard: DueShard, bound: string, need: number): Promise<void> {
    while (!shard.exhausted && shard.buffer.length < need) {
      const e = new Expression();
      const result = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: INDEX.due,
          KeyConditionExpression: `${e.name(ATTR.gsi2pk)} = ${e.value(shard.pk)} AND ${e.name(ATTR.gsi2sk)} <= ${e.value(bound)}`,
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
          ScanIndexForward: true,
          Limit: Math.max(need - shard.buffer.length, 10),
          ExclusiveStartKey: shard.startKey,
        }),
      );
      for (const item of result.Items ?? []) {
        shard.buffer.push({
          sortKey: item[ATTR.gsi2sk] as string,
          executionId: executionIdFromPk(item[ATTR.pk] as string),
        });
      }
      shard.startKey = result.LastEvaluatedKey;
      if (!shard.startKey) shard.exhausted = true;
    }
  }

  private async batchGetExecutions(executionIds: readonly string[]): Promise<ExecutionRecord[]> {
    const items = await this.batchGet(
      executionIds.map((id) => executionKey(id)),
      EXECUTION_RECORD_ATTRIBUTES,
      false,
    );
    const byId = new Map(items.map((item) => [item.executionId as string, executionFromItem(item)]));
    return executionIds.flatMap((id) => {
      const record = byId.get(id);
      return record ? [record] : [];
    });
  }

  /** Up to `limit` listing entries of one index partition below `position`, newest first. */
  /**
   * Newest-first entries of one listing partition, with their records. The listing indexes hold keys
   * only (so an execution's status changes cost no index write): records are batch-read here and
   * the status filter applies to them.
   */
  private async readListingPartition(
    partition: { index: string; pkName: string; skName: string; pk: string },
    position: string,
    limit: number,
    status: ExecutionStatus | undefined,
  ): Promise<{ entries: Array<{ sortKey: string; record: ExecutionRecord }>; exhausted: boolean }> {
    const entries: Array<{ sortKey: string; record: ExecutionRecord }> = [];
    let startKey: Record<string, unknown> | undefined;
    for (;;) {
      const e = new Expression();
      let keyCondition = `${e.name(partition.pkName)} = ${e.value(partition.pk)}`;
      if (position !== "") keyCondition += ` AND ${e.name(partition.skName)} < ${e.value(position)}`;
      const remaining = limit - entries.length;
      const result = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: partition.index,
          KeyConditionExpression: keyCondition,
          ProjectionExpression: e.projection([partition.skName, ATTR.pk]),
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
          ScanIndexForward: false,
          // With a status filter, read more per request: non-matching entries are dropped below.
          Limit: status === undefined ? remaining : Math.max(remaining * 2, 50),
          ExclusiveStartKey: startKey,
        }),
      );
      const found = (result.Items ?? []).map((item) => ({
        sortKey: item[partition.skName] as string,
        executionId: executionIdFromPk(item[ATTR.pk] as string),
      }));
      const records = new Map(
        (await this.batchGetExecutions(found.map((f) => f.executionId))).map((r) => [r.executionId, r]),
      );
      for (const { sortKey, executionId } of found) {
        const record = records.get(executionId);
        if (record && (status === undefined || record.status === status)) entries.push({ sortKey, record });
      }
      startKey = result.LastEvaluatedKey;
      if (!startKey) return { entries, exhausted: true };
      if (entries.length >= limit) return { entries: entries.slice(0, limit), exhausted: false };
    }
  }
}

function encodeCursor(cursor: ListingCursor): string {
  return Buffer.from(JSON.stringify(cursor), "utf8").toString("base64url");
}

function decodeCursor(next: string | undefined, partitions: number): Array<string | null> {
  if (next === undefined || next === "") return Array.from({ length: partitions }, () => "");
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(next, "base64url").toString("utf8"));
  } catch {
    throw new RangeError("invalid listing cursor");
  }
  const positions = (parsed as Partial<ListingCursor> | null)?.p;
  if (
    !Array.isArray(positions) ||
    positions.length !== partitions ||
    !positions.every((p) => p === null || typeof p === "string")
  ) {
    throw new RangeError("invalid listing cursor");
  }
  return positions as Array<string | null>;
}
