/**
 * The DynamoDB calls the store's modules repeat: a consistent get, a conditional update that
 * returns the item either way, transactions retried on conflicts, paged queries, batch reads.
 */
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import type { ExecutionRecord } from "../../domain/records.js";
import { EXECUTION_RECORD_ATTRIBUTES, executionFromItem, type Item } from "./codec.js";
import {
  type CancellationReasons,
  cancellationReasons,
  Expression,
  isConditionFailure,
  sleep,
  unmarshallOptions,
} from "./expression.js";
import { executionKey, type Key } from "./keys.js";

const BATCH_GET_LIMIT = 100;
/**
 * Chunks of one batchGet read at once: enough that a wide read (a 2,000-parent join, a due page)
 * takes a few round trips, few enough that one call does not flood the client's sockets.
 */
export const BATCH_GET_PARALLEL = 8;
const MAX_BATCH_RETRIES = 8;
const MAX_TRANSACTION_RETRIES = 5;

export class TableIO {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async get(
    key: Key,
    attributes?: readonly string[],
    consistency: "strong" | "eventual" = "strong",
  ): Promise<Item | undefined> {
    const e = new Expression();
    const projection = attributes && e.projection(attributes);
    const result = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: key,
        ConsistentRead: consistency === "strong",
        ProjectionExpression: projection,
        ExpressionAttributeNames: projection ? e.names : undefined,
      }),
    );
    return result.Item;
  }

  /** One conditional UpdateItem returning the new item, or the item as found when refused. */
  async conditionalUpdate(
    key: Key,
    e: Expression,
    condition: string,
    update: string,
  ): Promise<{ ok: true; item: Item } | { ok: false; current: Item | undefined }> {
    try {
      const result = await this.doc.send(
        new UpdateCommand({
          ...this.updateItem(key, e, condition, update).Update,
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

  /** A built conditional update as an item of a transaction. */
  updateItem(key: Key, e: Expression, condition: string, update: string) {
    return {
      Update: {
        TableName: this.tableName,
        Key: key,
        ConditionExpression: condition,
        UpdateExpression: update,
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.valuesOrUndefined,
      },
    };
  }

  /**
   * A conditional update that also requires `check` of another item, in one transaction. Refused
   * either way, the item comes back as it is now (a transaction returns none: it is read).
   */
  async conditionalUpdateChecked(
    key: Key,
    e: Expression,
    condition: string,
    update: string,
    check: { key: Key; e: Expression; condition: string },
  ): Promise<{ ok: true; item: Item } | { ok: false; current: Item | undefined }> {
    const outcome = await this.transact({
      TransactItems: [
        this.updateItem(key, e, condition, update),
        {
          ConditionCheck: {
            TableName: this.tableName,
            Key: check.key,
            ConditionExpression: check.condition,
            ExpressionAttributeNames: check.e.names,
            ExpressionAttributeValues: check.e.valuesOrUndefined,
          },
        },
      ],
    });
    const item = await this.get(key);
    return outcome === "ok" ? { ok: true, item: item ?? {} } : { ok: false, current: item };
  }

  /** A transaction, retried on TransactionConflict; "ok" or the cancellation reasons. */
  async transact(input: TransactWriteCommandInput): Promise<"ok" | CancellationReasons> {
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

  /** One Query call: its items, and the key to go on from when it stopped short of the end. */
  async queryPage(input: QueryCommandInput): Promise<{ items: Item[]; lastKey?: Record<string, unknown> }> {
    const result = await this.doc.send(new QueryCommand(input));
    return {
      items: result.Items ?? [],
      ...(result.LastEvaluatedKey ? { lastKey: result.LastEvaluatedKey } : {}),
    };
  }

  async queryAll(input: QueryCommandInput): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.doc.send(new QueryCommand({ ...input, ExclusiveStartKey: startKey }));
      items.push(...(result.Items ?? []));
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  /**
   * BatchGetItem in chunks of 100, up to BATCH_GET_PARALLEL chunks at once (one after another, a
   * 2,000-key read waited twenty round trips), retrying unprocessed keys with backoff. Order is not kept.
   */
  async batchGet(keys: readonly Key[], attributes: readonly string[], consistent = true): Promise<Item[]> {
    const chunks: Key[][] = [];
    for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT)
      chunks.push(keys.slice(start, start + BATCH_GET_LIMIT));
    const items: Item[] = [];
    let next = 0;
    const lane = async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++]!;
        items.push(...(await this.batchGetChunk(chunk, attributes, consistent)));
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCH_GET_PARALLEL, chunks.length) }, lane));
    return items;
  }

  /** One chunk of at most 100 keys, its unprocessed keys retried with backoff. */
  private async batchGetChunk(chunk: readonly Key[], attributes: readonly string[], consistent: boolean) {
    const items: Item[] = [];
    let pending: Record<string, unknown>[] = chunk.map((key) => ({ ...key }));
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
    return items;
  }

  async batchGetExecutions(executionIds: readonly string[]): Promise<ExecutionRecord[]> {
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
}
