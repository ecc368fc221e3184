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
 *
 * Beside it: expression.ts (request building), table-io.ts (the calls it repeats), writes.ts (node
 * write and TTL builders), listings.ts (the execution and due listings over sharded indexes),
 * workers.ts (external workers: the registry, the pools' offers, and taking a task).
 */
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  type TransactWriteCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import {
  type DeadLetterCursor,
  deadLetterCursorSchema,
  decodeCursor,
  encodeCursor,
} from "../../domain/cursor.js";
import { orderHistory } from "../../domain/history.js";
import { encodeStoredPayload } from "../../domain/payload.js";
import type { ReadyTask, WorkerRecord, WorkerRegistrationRecord } from "../../domain/placement.js";
import {
  type DeadLetterRecord,
  type ExecutionRecord,
  type ExecutionStatus,
  type HistoryEvent,
  type NodeRecord,
  pendingNode,
  type WorkflowVersionRecord,
} from "../../domain/records.js";
import type { Timer, TimerCursor } from "../../domain/timers.js";
import * as z from "../../domain/zod.js";
import type {
  ArrivalRequest,
  ArrivalResult,
  ArrivalShard,
  Consistency,
  CreateOutcome,
  DescendantBudget,
  ExecutionGuard,
  ExecutionPatch,
  ExecutionQuery,
  FanOutCounts,
  KeyedRequest,
  MapItemsReservation,
  NodeCondition,
  NodePatch,
  Outcome,
  Page,
  ShardArrivalRequest,
  SlotsItem,
  SlotWaiter,
  Store,
  TakeOutcome,
  TakeTask,
  VariablesItem,
  WorkflowSummary,
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
  keyedFromItem,
  nodeFromItem,
  toNumberArray,
  workflowVersionFromItem,
  workflowVersionToItem,
} from "./codec.js";
import { Expression, isConditionFailure, updateExpression } from "./expression.js";
import {
  descendantWrite,
  getFanOut,
  listMapItemReservations,
  releaseMapItems,
  reserveMapItems,
} from "./fan-out.js";
import {
  ATTR,
  arrivalShardKey,
  DEAD_LETTER_PK,
  deadLetterKey,
  dueKeys,
  executionKey,
  executionPk,
  executionPks,
  FINAL_EXECUTION_STATUSES,
  ITEM_PREFIX,
  idempotencyKey,
  type Key,
  leaseKey,
  mapItemsPrefix,
  NODE_PREFIX,
  nodeKey,
  shardFromSk,
  WORKFLOWS_PK,
  workflowHashKey,
  workflowHeadKey,
  workflowListingKey,
  workflowVersionKey,
} from "./keys.js";
import { listDueExecutions, listExecutions } from "./listings.js";
import { NodePartitions } from "./node-partitions.js";
import { deleteWaiter, getSlots, getWaiter, listWaiters, putSlots, putWaiter } from "./slots.js";
import { TableIO } from "./table-io.js";
import { advanceTimerCursor, getTimerCursor, getTimers, listTimers, putTimers } from "./timers.js";
import { getVariables, putVariables } from "./variables.js";
import {
  type ConditionOn,
  deleteWorker,
  getWorker,
  listReadyTasks,
  listWorkers,
  offerTask,
  pageWorkers,
  putWorker,
  releaseHold,
  takeTask,
  touchWorker,
  withdrawTask,
} from "./workers.js";
import { expiresAfter, nodeWrite, retention } from "./writes.js";

export { documentClient } from "./expression.js";

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
  "composite",
  "waitingFor",
] as const;

/** A workflow listing's position: the name of the last one answered (as MemoryStore's). */
const workflowCursorSchema = z.object({ w: z.string().check(z.minLength(1), z.maxLength(256)) });

const WORKFLOW_SUMMARY_ATTRIBUTES = ["name", "latestVersion", "createdAt", "description"] as const;

export interface DynamoStoreOptions {
  /**
   * Finished executions and their nodes are deleted by DynamoDB's TTL this long after they finish
   * (never used as a timer: TTL deletes "within about two days"). Unset: kept forever.
   */
  retentionDays?: number;
}

export class DynamoStore implements Store {
  private readonly io: TableIO;
  /** Each execution's node shards (keys.ts): remembered from every execution record read or written. */
  private readonly partitions: NodePartitions;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly options: DynamoStoreOptions = {},
  ) {
    this.io = new TableIO(doc, tableName);
    this.partitions = new NodePartitions(this.io);
  }

  // ── workflows ─────────────────────────────────────────────────────────────────────────────────

  async getWorkflowVersion(name: string, version?: number): Promise<WorkflowVersionRecord | undefined> {
    if (version !== undefined) {
      if (!Number.isSafeInteger(version) || version < 1) return undefined;
      const item = await this.io.get(workflowVersionKey(name, version));
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

  async getLatestWorkflowVersion(name: string): Promise<number | undefined> {
    // The head item (a few bytes, half a read unit), not the latest version's definition.
    const item = await this.io.get(workflowHeadKey(name), ["latestVersion"], "eventual");
    return item === undefined ? undefined : Number(item.latestVersion);
  }

  async findWorkflowVersionByHash(name: string, definitionHash: string): Promise<number | undefined> {
    const item = await this.io.get(workflowHashKey(name, definitionHash));
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
    const result = await this.io.transact({
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
        this.workflowListingWrite(record),
      ],
    });
    return result === "ok" ? "created" : "conflict";
  }

  /**
   * The workflow's listing item, brought up to this version (the head's write guards the
   * transaction, so this one needs no condition); created with the first version, or with the next
   * one of a workflow registered before the listing existed.
   */
  private workflowListingWrite(
    record: WorkflowVersionRecord,
  ): NonNullable<TransactWriteCommandInput["TransactItems"]>[number] {
    const e = new Expression();
    const description = record.definition.description;
    const sets = [
      `${e.name("name")} = ${e.value(record.name)}`,
      `${e.name("latestVersion")} = ${e.value(record.version)}`,
      `${e.name("createdAt")} = if_not_exists(${e.name("createdAt")}, ${e.value(record.createdAt)})`,
      ...(description === undefined ? [] : [`${e.name("description")} = ${e.value(description)}`]),
    ];
    const removes = description === undefined ? [e.name("description")] : [];
    return {
      Update: {
        TableName: this.tableName,
        Key: workflowListingKey(record.name),
        UpdateExpression: updateExpression(sets, removes),
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.values,
      },
    };
  }

  /** Every workflow's name (the `WORKFLOWS` partition, every page). */
  private async workflowNames(): Promise<string[]> {
    const names: string[] = [];
    let next: string | undefined;
    do {
      const page = await this.listWorkflows({ limit: 1000, ...(next === undefined ? {} : { next }) });
      names.push(...page.items.map((workflow) => workflow.name));
      next = page.next;
    } while (next !== undefined);
    return names;
  }

  async listWorkflows(page: { limit: number; next?: string }): Promise<Page<WorkflowSummary>> {
    const limit = Math.floor(page.limit);
    if (!(limit > 0)) return { items: [] };
    const { items, more } = await this.queryPartitionPage(
      WORKFLOWS_PK,
      WORKFLOW_SUMMARY_ATTRIBUTES,
      limit,
      page.next === undefined
        ? undefined
        : workflowListingKey(decodeCursor(page.next, workflowCursorSchema).w),
    );
    const summaries = items.slice(0, limit).map(
      (item): WorkflowSummary => ({
        name: item.name as string,
        latestVersion: Number(item.latestVersion),
        createdAt: Number(item.createdAt),
        ...(typeof item.description === "string" ? { description: item.description } : {}),
      }),
    );
    const last = summaries.at(-1);
    return more && last ? { items: summaries, next: encodeCursor({ w: last.name }) } : { items: summaries };
  }

  // ── executions ────────────────────────────────────────────────────────────────────────────────

  async createExecution(
    record: ExecutionRecord,
    event: HistoryEvent,
    keyed?: KeyedRequest,
    budget?: DescendantBudget,
  ): Promise<CreateOutcome> {
    const item = executionToItem(record, [event]);
    const put = {
      TableName: this.tableName,
      Item: item,
      ConditionExpression: "attribute_not_exists(#pk)",
      ExpressionAttributeNames: { "#pk": ATTR.pk },
    };
    if (budget !== undefined && (record.idempotencyKey === undefined || record.rootExecutionId === undefined))
      throw new Error("a create with a budget needs its root and an idempotency key");
    // A child counts against its root in the transaction that creates it, which its key makes happen once.
    const counted =
      budget === undefined
        ? []
        : [
            descendantWrite(
              this.tableName,
              record.rootExecutionId!,
              budget.limit,
              budget.now,
              this.options.retentionDays,
            ),
          ];
    if (record.idempotencyKey === undefined) {
      try {
        await this.doc.send(new PutCommand(put));
        this.partitions.remember(record);
        return { created: true };
      } catch (error) {
        if (isConditionFailure(error)) throw new Error(`execution ${record.executionId} already exists`);
        throw error;
      }
    }
    if (keyed === undefined) throw new Error("a create with an idempotency key needs what its request asked");
    const idemKey = idempotencyKey(record.workflow, record.idempotencyKey);
    const keyItem = {
      ...idemKey,
      executionId: record.executionId,
      createdAt: record.createdAt,
      inputSha256: keyed.inputSha256,
      start: keyed.start,
    };
    // The key is claimed while free. A key whose execution the retention (TTL) deleted is free again:
    // claimed on the execution it names, and on that execution's absence, in the same transaction.
    let stale: string | undefined;
    for (let round = 0; round < 3; round++) {
      const claim =
        stale === undefined
          ? [
              {
                Put: {
                  TableName: this.tableName,
                  Item: keyItem,
                  ConditionExpression: "attribute_not_exists(#pk)",
                  ExpressionAttributeNames: { "#pk": ATTR.pk },
                },
              },
            ]
          : [
              {
                Put: {
                  TableName: this.tableName,
                  Item: keyItem,
                  ConditionExpression: "#ex = :ex",
                  ExpressionAttributeNames: { "#ex": "executionId" },
                  ExpressionAttributeValues: { ":ex": stale },
                },
              },
              {
                ConditionCheck: {
                  TableName: this.tableName,
                  Key: executionKey(stale),
                  ConditionExpression: "attribute_not_exists(#pk)",
                  ExpressionAttributeNames: { "#pk": ATTR.pk },
                },
              },
            ];
      const result = await this.io.transact({ TransactItems: [...claim, { Put: put }, ...counted] });
      if (result === "ok") {
        this.partitions.remember(record);
        return { created: true };
      }
      const failed = (at: number) => result[at]?.Code === "ConditionalCheckFailed";
      if (failed(claim.length)) throw new Error(`execution ${record.executionId} already exists`);
      // The key was free (so this is no repeat) and only the count refused: over the budget.
      if (counted.length > 0 && failed(claim.length + 1) && !claim.some((_, at) => failed(at)))
        return { created: false, overBudget: true };
      const held = await this.io.get(idemKey);
      const existing = held && (await this.getExecution(held.executionId as string));
      if (held && existing) return { created: false, existing, keyed: keyedFromItem(held) };
      stale = held?.executionId as string | undefined;
    }
    throw new Error(`idempotency key ${record.idempotencyKey} of ${record.workflow} could not be claimed`);
  }

  async getExecution(
    executionId: string,
    consistency: Consistency = "strong",
  ): Promise<ExecutionRecord | undefined> {
    const read = this.io
      .get(executionKey(executionId), EXECUTION_RECORD_ATTRIBUTES, consistency)
      .then((item) => item && this.remembered(executionFromItem(item)));
    return this.partitions.read(executionId, read);
  }

  /** An execution record read or written, its node shards remembered (node-partitions.ts). */
  private remembered(record: ExecutionRecord): ExecutionRecord {
    this.partitions.remember(record);
    return record;
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
    const clauses = [statusCondition];
    if (guard.noFailedNode)
      clauses.push(
        `attribute_not_exists(${e.name("failedNode")})`,
        `attribute_not_exists(${e.name("reviving")})`,
      );
    if (guard.failedNode) clauses.push(`attribute_exists(${e.name("failedNode")})`);
    if (guard.reviving !== undefined) clauses.push(`${e.name("reviving")} = ${e.value(guard.reviving)}`);
    if (guard.notSweptAfter !== undefined) {
      const sweptAt = e.name("sweptAt");
      clauses.push(`(attribute_not_exists(${sweptAt}) OR ${sweptAt} <= ${e.value(guard.notSweptAfter)})`);
    }
    const condition = clauses.join(" AND ");
    const sets: string[] = [];
    const removes: string[] = [];
    const finishing = patch.status !== undefined && FINAL_EXECUTION_STATUSES.includes(patch.status);
    for (const [field, value] of Object.entries(patch)) {
      if (field === "sweepAt") continue;
      if (field === "input" && patch.input !== undefined)
        sets.push(`${e.name(field)} = ${e.value(encodeStoredPayload(patch.input))}`);
      else if (value === null) removes.push(e.name(field));
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
    retention(
      e,
      this.options.retentionDays,
      patch.status === undefined ? undefined : finishing,
      patch.finishedAt,
      sets,
      removes,
    );
    if (event) sets.push(e.appendHistory(event));
    if (sets.length === 0 && removes.length === 0) sets.push(`${status} = ${status}`);
    const key = executionKey(executionId);
    const item = await this.io.conditionalUpdate(key, e, condition, updateExpression(sets, removes));
    if (item.ok) return { ok: true, record: this.remembered(executionFromItem(item.item)) };
    return { ok: false, current: item.current && this.remembered(executionFromItem(item.current)) };
  }

  async recordSinkDone(executionId: string, sinkIndex: number): Promise<Outcome<ExecutionRecord>> {
    const e = new Expression();
    const sinks = e.name("sinksDone");
    const condition = `${e.name("status")} = ${e.value("RUNNING")} AND NOT contains(${sinks}, ${e.value(sinkIndex)})`;
    const update = updateExpression([], [], [`${sinks} ${e.value(new Set([sinkIndex]))}`]);
    const result = await this.io.conditionalUpdate(executionKey(executionId), e, condition, update);
    if (result.ok) return { ok: true, record: this.remembered(executionFromItem(result.item)) };
    return { ok: false, current: result.current && this.remembered(executionFromItem(result.current)) };
  }

  async listExecutions(query: ExecutionQuery): Promise<Page<ExecutionRecord>> {
    const page = await listExecutions(this.io, query, () => this.workflowNames());
    this.partitions.remember(...page.items);
    return page;
  }

  // ── nodes ─────────────────────────────────────────────────────────────────────────────────────

  async getNode(executionId: string, nodeId: string): Promise<NodeRecord | undefined> {
    const shards = await this.partitions.of(executionId);
    const item = await this.io.get(nodeKey(executionId, nodeId, shards), NODE_RECORD_ATTRIBUTES);
    return item && nodeFromItem(item);
  }

  async getNodes(
    executionId: string,
    nodeIds: readonly string[],
    consistency: Consistency = "strong",
  ): Promise<NodeRecord[]> {
    const unique = [...new Set(nodeIds)];
    const shards = unique.length === 0 ? 1 : await this.partitions.of(executionId);
    const items = await this.io.batchGet(
      unique.map((nodeId) => nodeKey(executionId, nodeId, shards)),
      NODE_RECORD_ATTRIBUTES,
      consistency === "strong",
    );
    // A node's sort key is its own whichever partition holds it.
    const byId = new Map(items.map((item) => [item[ATTR.sk] as string, nodeFromItem(item)]));
    return unique.flatMap((nodeId) => {
      const record = byId.get(nodeKey(executionId, nodeId).sk);
      return record ? [record] : [];
    });
  }

  async listNodes(executionId: string): Promise<NodeRecord[]> {
    const items = await this.queryPartitions(executionId, (pk) => {
      const e = new Expression();
      return {
        TableName: this.tableName,
        KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(pk)} AND begins_with(${e.name(ATTR.sk)}, ${e.value(NODE_PREFIX)})`,
        ProjectionExpression: e.projection(NODE_RECORD_ATTRIBUTES),
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.values,
        ConsistentRead: true,
      };
    });
    return items.map(nodeFromItem);
  }

  /**
   * Every page of a query of each of an execution's partitions (keys.ts), in parallel, merged in
   * sort-key order: with one partition, the one query of before. `query` builds the request for a
   * partition (its shard: 0 is the execution's own), or undefined to skip it.
   */
  private async queryPartitions(
    executionId: string,
    query: (pk: string, shard: number) => QueryCommandInput | undefined,
  ): Promise<Item[]> {
    const pks = executionPks(executionId, await this.partitions.of(executionId));
    const requests = pks.flatMap((pk, shard) => {
      const request = query(pk, shard);
      return request === undefined ? [] : [request];
    });
    if (requests.length === 1) return this.io.queryAll(requests[0]!);
    const pages = await Promise.all(requests.map((request) => this.io.queryAll(request)));
    return pages.flat().sort((a, b) => compareKeys(a[ATTR.sk] as string, b[ATTR.sk] as string));
  }

  async listMapItems(
    executionId: string,
    mapId: string,
    mapAttempt: number,
    options: { statusOnly?: boolean } = {},
  ): Promise<NodeRecord[]> {
    const items = await this.queryPartitions(executionId, (pk) => {
      const e = new Expression();
      return {
        TableName: this.tableName,
        KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(pk)} AND begins_with(${e.name(ATTR.sk)}, ${e.value(mapItemsPrefix(mapId, mapAttempt))})`,
        ProjectionExpression: e.projection(
          options.statusOnly ? [ATTR.pk, ATTR.sk, "status", "attempt"] : NODE_RECORD_ATTRIBUTES,
        ),
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.values,
        // Progress may lag a moment; what decides (the sweeper, cancellation) reads strongly.
        ConsistentRead: !options.statusOnly,
      };
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
    const shards = await this.partitions.of(executionId);
    const write = nodeWrite(executionId, shards, nodeId, condition, patch, event, this.options.retentionDays);
    const check = condition.executionEnding
      ? endingCheck(executionId)
      : condition.executionLive
        ? liveCheck(executionId)
        : undefined;
    const result = check
      ? await this.io.conditionalUpdateChecked(write.key, write.e, write.condition, write.update, check)
      : await this.io.conditionalUpdate(write.key, write.e, write.condition, write.update);
    if (result.ok) return { ok: true, record: nodeFromItem(result.item) };
    return { ok: false, current: result.current && nodeFromItem(result.current) };
  }

  async failNode(
    executionId: string,
    nodeId: string,
    condition: NodeCondition,
    patch: NodePatch,
    event?: HistoryEvent | readonly HistoryEvent[],
    options: { sweepAt?: number } = {},
  ): Promise<Outcome<NodeRecord>> {
    const shards = await this.partitions.of(executionId);
    const node = nodeWrite(executionId, shards, nodeId, condition, patch, event, this.options.retentionDays);
    const x = new Expression();
    const failedNode = x.name("failedNode");
    // sweepAt and the due-index keys change together (keys.ts, gsi2).
    const due =
      options.sweepAt === undefined
        ? ""
        : [
            `, ${x.name("sweepAt")} = ${x.value(options.sweepAt)}`,
            ...Object.entries(dueKeys(executionId, options.sweepAt)).map(
              ([name, value]) => `, ${x.name(name)} = ${x.value(value)}`,
            ),
          ].join("");
    const outcome = await this.io.transact({
      TransactItems: [
        this.io.updateItem(node.key, node.e, node.condition, node.update),
        this.io.updateItem(
          executionKey(executionId),
          x,
          `${x.name("status")} = ${x.value("RUNNING")}`,
          `SET ${failedNode} = if_not_exists(${failedNode}, ${x.value(nodeId)})${due}`,
        ),
      ],
    });
    if (outcome === "ok") {
      const item = await this.io.get(node.key);
      return { ok: true, record: nodeFromItem(item ?? {}) };
    }
    if (outcome[0]?.Code === "ConditionalCheckFailed") {
      const current = await this.io.get(node.key);
      return { ok: false, current: current && nodeFromItem(current) };
    }
    // Only the execution's condition failed: it is not RUNNING, so the node fails alone.
    return this.transitionNode(executionId, nodeId, condition, patch, event);
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

    const sets = [
      `${status} = if_not_exists(${status}, ${pending})`,
      `${attempt} = if_not_exists(${attempt}, ${e.value(0)})`,
    ];
    const adds = [`${request.outcome === "ok" ? okDeps : badDeps} ${e.value(new Set([parentIndex]))}`];

    const key = nodeKey(executionId, childId, await this.partitions.of(executionId));
    const update = updateExpression(sets, [], adds);
    // A bad arrival is a cancellation's cause: only while the execution is ending.
    const result =
      request.outcome === "bad"
        ? await this.io.conditionalUpdateChecked(key, e, condition, update, endingCheck(executionId))
        : await this.io.conditionalUpdate(key, e, condition, update);
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
      sets.push(`${e.name(ATTR.ttl)} = ${e.value(expiresAfter(request.now, days))}`);
    }
    const shards = await this.partitions.of(request.executionId);
    // Adding to a set is idempotent, so no condition: the old set tells which parents are new.
    const result = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: arrivalShardKey(request.executionId, request.childId, request.shard, shards),
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
    const nodeShards = unique.length === 0 ? 1 : await this.partitions.of(executionId);
    const items = await this.io.batchGet(
      unique.map((shard) => arrivalShardKey(executionId, childId, shard, nodeShards)),
      [ATTR.sk, "okDeps"],
    );
    return items
      .map((item) => ({ shard: shardFromSk(item[ATTR.sk] as string), okDeps: toNumberArray(item.okDeps) }))
      .sort((a, b) => a.shard - b.shard);
  }

  // ── fan-out budget ────────────────────────────────────────────────────────────────────────────

  async reserveMapItems(
    reservation: MapItemsReservation,
    limit: number,
    now: number,
    fence?: { nodeId: string; leaseToken: string },
  ): Promise<{ ok: true } | { ok: false; inFlight: number; fenced?: true }> {
    return reserveMapItems(
      this.io,
      this.tableName,
      reservation,
      limit,
      now,
      this.options.retentionDays,
      fence && { ...fence, nodeShards: await this.partitions.of(reservation.executionId) },
    );
  }

  releaseMapItems(reservation: MapItemsReservation): Promise<boolean> {
    return releaseMapItems(this.io, this.tableName, reservation);
  }

  listMapItemReservations(executionId: string): Promise<MapItemsReservation[]> {
    return listMapItemReservations(this.io, this.tableName, executionId);
  }

  getFanOut(rootExecutionId: string): Promise<FanOutCounts> {
    return getFanOut(this.io, rootExecutionId);
  }

  // ── history ───────────────────────────────────────────────────────────────────────────────────

  // ── concurrency slots (slots.ts) ──────────────────────────────────────────────────────────────

  getSlots(slotKey: string): Promise<SlotsItem | undefined> {
    return getSlots(this.io, slotKey);
  }

  putSlots(slotKey: string, item: SlotsItem, expectedVersion: number, now: number): Promise<boolean> {
    return putSlots(this.io, slotKey, item, expectedVersion, now, this.options.retentionDays);
  }

  putWaiter(waiter: SlotWaiter, now: number): Promise<void> {
    return putWaiter(this.io, waiter, now, this.options.retentionDays);
  }

  getWaiter(slotKey: string, place: string): Promise<SlotWaiter | undefined> {
    return getWaiter(this.io, slotKey, place);
  }

  listWaiters(slotKey: string, limit: number): Promise<SlotWaiter[]> {
    return listWaiters(this.io, slotKey, limit);
  }

  deleteWaiter(slotKey: string, place: string): Promise<boolean> {
    return deleteWaiter(this.io, slotKey, place);
  }

  // ── execution variables (variables.ts) ─────────────────────────────────────────────────────────

  getVariables(executionId: string): Promise<VariablesItem | undefined> {
    return getVariables(this.io, executionId);
  }

  putVariables(
    executionId: string,
    item: VariablesItem,
    expectedVersion: number,
    now: number,
  ): Promise<boolean> {
    return putVariables(this.io, executionId, item, expectedVersion, now, this.options.retentionDays);
  }

  async listHistory(executionId: string, options: { withItems?: boolean } = {}): Promise<HistoryEvent[]> {
    // The execution item (sk "EX") sorts before map items ("I#…") and nodes ("N#…"). Without
    // items, two ranges are read: the one before the items, and the nodes. The execution's other
    // partitions (keys.ts) hold nodes, map items and arrival shards only (with no history).
    const query = (pk: string, range?: { below: string } | { prefix: string }): QueryCommandInput => {
      const e = new Expression();
      const partition = `${e.name(ATTR.pk)} = ${e.value(pk)}`;
      const sk = e.name(ATTR.sk);
      const condition =
        range === undefined
          ? partition
          : "below" in range
            ? `${partition} AND ${sk} < ${e.value(range.below)}`
            : `${partition} AND begins_with(${sk}, ${e.value(range.prefix)})`;
      return {
        TableName: this.tableName,
        KeyConditionExpression: condition,
        ProjectionExpression: e.projection([ATTR.sk, ATTR.history]),
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.values,
        ConsistentRead: true,
      };
    };
    const items = options.withItems
      ? await this.queryPartitions(executionId, (pk) => query(pk))
      : [
          ...(await this.io.queryAll(query(executionPk(executionId), { below: ITEM_PREFIX }))),
          ...(await this.queryPartitions(executionId, (pk) => query(pk, { prefix: NODE_PREFIX }))),
        ];
    // Each item's list is in its written order (domain/history.ts merges them).
    return orderHistory(items.flatMap(historyFromItem));
  }

  // ── sweeping ──────────────────────────────────────────────────────────────────────────────────

  async listDueExecutions(now: number, limit: number): Promise<ExecutionRecord[]> {
    const due = await listDueExecutions(this.io, now, limit);
    this.partitions.remember(...due);
    return due;
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

  // ── timers (dynamo/timers.ts) ─────────────────────────────────────────────────────────────────

  putTimers(timers: readonly Timer[]): Promise<void> {
    return putTimers(this.io, timers);
  }

  getTimers(timers: ReadonlyArray<Pick<Timer, "message" | "dueAt">>): Promise<Timer[]> {
    return getTimers(this.io, timers);
  }

  listTimers(
    shard: number,
    from: number,
    through: number,
    page: { limit: number; next?: string },
  ): Promise<Page<Timer>> {
    return listTimers(this.io, shard, from, through, page);
  }

  getTimerCursor(): Promise<TimerCursor | undefined> {
    return getTimerCursor(this.io);
  }

  advanceTimerCursor(cursor: TimerCursor): Promise<boolean> {
    return advanceTimerCursor(this.io, cursor);
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
    const { items, more } = await this.queryPartitionPage(
      DEAD_LETTER_PK,
      DEAD_LETTER_RECORD_ATTRIBUTES,
      limit,
      page.next === undefined ? undefined : deadLetterKey(decodeCursor(page.next, deadLetterCursorSchema).d),
    );
    const records = items.slice(0, limit).map(deadLetterFromItem);
    const last = records.at(-1);
    return more && last
      ? { items: records, next: encodeCursor({ d: last.id } satisfies DeadLetterCursor) }
      : { items: records };
  }

  /**
   * Up to `limit` items of one partition in key order from `after` (exclusive), strongly consistent.
   * One more than a page is read, so `more` says whether another page follows (as the in-memory
   * store answers `next`).
   */
  private async queryPartitionPage(
    pk: string,
    attributes: readonly string[],
    limit: number,
    after: Key | undefined,
  ): Promise<{ items: Item[]; more: boolean }> {
    const items: Item[] = [];
    let startKey: Record<string, unknown> | undefined = after === undefined ? undefined : { ...after };
    for (;;) {
      const e = new Expression();
      const result = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: `${e.name(ATTR.pk)} = ${e.value(pk)}`,
          ProjectionExpression: e.projection(attributes),
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
          ScanIndexForward: true,
          ConsistentRead: true,
          Limit: limit + 1 - items.length,
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(result.Items ?? []));
      if (items.length > limit) return { items, more: true };
      startKey = result.LastEvaluatedKey;
      if (!startKey) return { items, more: false };
    }
  }

  async getDeadLetter(id: string): Promise<DeadLetterRecord | undefined> {
    const item = await this.io.get(deadLetterKey(id), DEAD_LETTER_RECORD_ATTRIBUTES);
    return item && deadLetterFromItem(item);
  }

  async deleteDeadLetter(id: string): Promise<boolean> {
    const result = await this.doc.send(
      new DeleteCommand({ TableName: this.tableName, Key: deadLetterKey(id), ReturnValues: "ALL_OLD" }),
    );
    return result.Attributes !== undefined;
  }

  // ── external workers (workers.ts) ─────────────────────────────────────────────────────────────

  async putWorker(worker: WorkerRegistrationRecord, deadBefore: number): Promise<Outcome<WorkerRecord>> {
    return putWorker(this.io, worker, deadBefore);
  }

  async pageWorkers(page: { limit: number; next?: string }, now: number): Promise<Page<WorkerRecord>> {
    return pageWorkers(this.io, page, now);
  }

  async getWorker(workerId: string): Promise<WorkerRecord | undefined> {
    return getWorker(this.io, workerId);
  }

  async listWorkers(): Promise<WorkerRecord[]> {
    return listWorkers(this.io);
  }

  async touchWorker(workerId: string, now: number): Promise<WorkerRecord | undefined> {
    return touchWorker(this.io, workerId, now);
  }

  async deleteWorker(workerId: string, version: number): Promise<boolean> {
    return deleteWorker(this.io, workerId, version);
  }

  async offerTask(task: ReadyTask): Promise<void> {
    return offerTask(this.io, task);
  }

  async listReadyTasks(pool: string, limit: number, from?: string): Promise<ReadyTask[]> {
    return listReadyTasks(this.io, pool, limit, from);
  }

  async withdrawTask(task: ReadyTask): Promise<void> {
    return withdrawTask(this.io, task);
  }

  /** The node claim is the update transitionNode makes (nodeWrite), in the take's transaction. */
  async takeTask(take: TakeTask): Promise<TakeOutcome> {
    const { executionId, nodeId } = take.task;
    const { condition, patch, event } = take.claim;
    const shards = await this.partitions.of(executionId);
    const claim = nodeWrite(executionId, shards, nodeId, condition, patch, event, this.options.retentionDays);
    return takeTask(
      this.io,
      take,
      claim.key,
      this.io.updateItem(claim.key, claim.e, claim.condition, claim.update),
      condition.executionEnding ? endingCheck(executionId) : undefined,
      NODE_RECORD_ATTRIBUTES,
    );
  }

  async releaseHold(workerId: string, key: string, leaseToken: string): Promise<void> {
    return releaseHold(this.io, workerId, key, leaseToken);
  }
}

/**
 * Sort keys in DynamoDB's order (by UTF-8 bytes, that is by code point), as a Query of one
 * partition answers them, for the merge of several. UTF-16 units sort as code points but for a
 * surrogate (a code point over U+FFFF) against U+E000–U+FFFF.
 */
function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return x >= 0xd800 && y >= 0xd800 ? codePointRank(x) - codePointRank(y) : x - y;
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/** The check that an execution lives (NodeCondition.executionLive): RUNNING with no failure mark. */
function liveCheck(executionId: string): ConditionOn {
  const x = new Expression();
  return {
    key: executionKey(executionId),
    e: x,
    condition: `${x.name("status")} = ${x.value("RUNNING")} AND attribute_not_exists(${x.name("failedNode")})`,
  };
}

/**
 * The check that an execution is ending (NodeCondition.executionEnding): finished, or RUNNING with
 * a failure mark.
 */
function endingCheck(executionId: string): ConditionOn {
  const x = new Expression();
  const status = x.name("status");
  const finished = FINAL_EXECUTION_STATUSES.map((s) => x.value(s)).join(", ");
  return {
    key: executionKey(executionId),
    e: x,
    condition: `${status} IN (${finished}) OR (${status} = ${x.value("RUNNING")} AND attribute_exists(${x.name("failedNode")}))`,
  };
}
