/**
 * The in-memory backend makes no AWS calls, so its ports are wrapped to record the calls the AWS
 * adapters would make for the same port calls (shared/adapters/dynamo/store.ts, sqs/queue.ts,
 * eventbridge/publisher.ts, s3/blobs.ts): one UpdateItem per conditional transition, a GetItem per
 * single read, BatchGetItem per 100 keys, SendMessageBatch per 10 messages, a PutObject per blob
 * written, a GetObject per blob read (a HeadObject per size asked), and so on. Capacity is a floor:
 * 1 WCU per write (items ≤ 1 KB), 2 per transactional item, 1 RCU per item read (≤ 4 KB; ½ eventually consistent),
 * so it undercounts items carrying inline values over 1 KB (up to the inline threshold). The moto
 * backend measures the real calls and models capacity from real item sizes.
 */
import type {
  BlobStore,
  Consistency,
  EnginePorts,
  EventPublisher,
  Store,
  TaskQueue,
} from "../shared/ports.js";
import type { CallLog } from "./calls.js";

const per = (n: number, size: number) => Math.ceil(n / size);
/** Read units of `items` items of at most 4 KB: half for an eventually consistent read. */
const units = (items: number, consistency: Consistency = "strong") =>
  consistency === "strong" ? items : items / 2;

/**
 * With `latencyMs`, every call also waits that long before it runs, as a call to AWS would: the
 * handler's duration then shows what its calls cost in time given the engine's own concurrency
 * (records of a batch run at once, children are decided at once), which a sum of calls cannot.
 */
export function countingPorts(ports: EnginePorts, log: CallLog, latencyMs = 0): EnginePorts {
  const latency =
    latencyMs > 0 ? () => new Promise<void>((resolve) => setTimeout(resolve, latencyMs)) : undefined;
  const store = withLatency(ports.store, latency);
  const write = (op = "DynamoDB.UpdateItem") => {
    log.op(op);
    log.ddb.writeUnits += 1;
  };
  /** TransactWriteItems of a node write and a ConditionCheck: 2 write units per item. */
  const fencedWrite = () => {
    log.op("DynamoDB.TransactWriteItems", 2);
    log.ddb.writeUnits += 4;
  };
  const read = (op: string, items = 1, units = items) => {
    log.op(op, items);
    log.ddb.readUnits += units;
  };
  /**
   * The due index (gsi2, keys only) is written when an execution's `sweepAt` comes, goes or moves:
   * an entry put or deleted costs 1 write unit, a key changed 2 (shared/adapters/dynamo/keys.ts).
   * Read from the store around the call, uncounted.
   */
  const dueIndexed = async <T>(executionId: string, call: () => Promise<T>): Promise<T> => {
    const due = async () => {
      const record = await ports.store.getExecution(executionId);
      return record &&
        record.status !== "SUCCEEDED" &&
        record.status !== "FAILED" &&
        record.status !== "CANCELLED"
        ? record.sweepAt
        : undefined;
    };
    const before = await due();
    const result = await call();
    const after = await due();
    if (before !== after) log.ddb.indexWriteUnits += before !== undefined && after !== undefined ? 2 : 1;
    return result;
  };
  /**
   * A listing of an execution's items: one Query per partition of its nodes (its record's
   * nodeShards, read uncounted; shared/adapters/dynamo/keys.ts), each of at least one read unit
   * (`divisor` 2: eventually consistent), the items spread evenly.
   */
  const queryShards = async (executionId: string, items: number, itemBytes: number, divisor: number) => {
    const shards = (await ports.store.getExecution(executionId))?.nodeShards ?? 1;
    for (let shard = 0; shard < shards; shard++) {
      const mine = Math.floor(items / shards) + (shard < items % shards ? 1 : 0);
      read("DynamoDB.Query", mine, Math.max(1, per(mine * itemBytes, 4096) / divisor));
    }
  };
  const counted: Store = {
    getWorkflowVersion: async (name, version) => {
      read(version === undefined ? "DynamoDB.Query" : "DynamoDB.GetItem");
      return store.getWorkflowVersion(name, version);
    },
    getLatestWorkflowVersion: async (name) => {
      read("DynamoDB.GetItem", 1, units(1, "eventual"));
      return store.getLatestWorkflowVersion(name);
    },
    findWorkflowVersionByHash: async (name, hash) => {
      read("DynamoDB.GetItem");
      return store.findWorkflowVersionByHash(name, hash);
    },
    putWorkflowVersion: async (record) => {
      // The version, its hash index, the latest pointer and the WORKFLOWS listing item.
      log.op("DynamoDB.TransactWriteItems", 4);
      log.ddb.writeUnits += 8;
      return store.putWorkflowVersion(record);
    },
    listWorkflows: async (page) => {
      read("DynamoDB.Query");
      return store.listWorkflows(page);
    },
    createExecution: async (record, event, keyed, budget) => {
      if (record.idempotencyKey === undefined) write("DynamoDB.PutItem");
      else {
        // A child's create also counts it against its root's fan-out budget (one more item).
        const items = budget === undefined ? 2 : 3;
        log.op("DynamoDB.TransactWriteItems", items);
        log.ddb.writeUnits += 2 * items;
      }
      // The new execution enters the listing index gsi1, and the due index gsi2 when it has a sweepAt.
      log.ddb.indexWriteUnits += 1;
      return dueIndexed(record.executionId, () => store.createExecution(record, event, keyed, budget));
    },
    reserveMapItems: async (reservation, limit, now, fence) => {
      // The marker's Put, the count's Update and the map node's ConditionCheck.
      log.op("DynamoDB.TransactWriteItems", 3);
      log.ddb.writeUnits += 4;
      log.ddb.readUnits += 2;
      return store.reserveMapItems(reservation, limit, now, fence);
    },
    releaseMapItems: async (reservation) => {
      fencedWrite();
      return store.releaseMapItems(reservation);
    },
    listMapItemReservations: async (id) => {
      read("DynamoDB.Query");
      return store.listMapItemReservations(id);
    },
    getVariables: async (executionId) => {
      read("DynamoDB.GetItem");
      return store.getVariables(executionId);
    },
    putVariables: async (executionId, item, expectedVersion, now) => {
      write("DynamoDB.PutItem");
      return store.putVariables(executionId, item, expectedVersion, now);
    },
    getSlots: async (slotKey) => {
      read("DynamoDB.GetItem");
      return store.getSlots(slotKey);
    },
    putSlots: async (slotKey, item, expectedVersion, now) => {
      write("DynamoDB.PutItem");
      return store.putSlots(slotKey, item, expectedVersion, now);
    },
    putWaiter: async (waiter, now) => {
      write("DynamoDB.PutItem");
      return store.putWaiter(waiter, now);
    },
    getWaiter: async (slotKey, place) => {
      read("DynamoDB.GetItem");
      return store.getWaiter(slotKey, place);
    },
    listWaiters: async (slotKey, limit) => {
      read("DynamoDB.Query");
      return store.listWaiters(slotKey, limit);
    },
    deleteWaiter: async (slotKey, place) => {
      write("DynamoDB.DeleteItem");
      return store.deleteWaiter(slotKey, place);
    },
    getFanOut: async (root) => {
      read("DynamoDB.GetItem");
      return store.getFanOut(root);
    },
    getExecution: async (id, consistency) => {
      read("DynamoDB.GetItem", 1, units(1, consistency));
      return store.getExecution(id, consistency);
    },
    transitionExecution: async (id, from, patch, event, guard) => {
      write();
      // The listing index is keys-only (no write on a status change).
      return dueIndexed(id, () => store.transitionExecution(id, from, patch, event, guard));
    },
    recordSinkDone: async (id, sink) => {
      write();
      return store.recordSinkDone(id, sink);
    },
    listExecutions: async (query) => {
      read("DynamoDB.Query");
      return store.listExecutions(query);
    },
    getNode: async (id, nodeId) => {
      read("DynamoDB.GetItem");
      return store.getNode(id, nodeId);
    },
    getNodes: async (id, nodeIds, consistency) => {
      const unique = new Set(nodeIds).size;
      for (let i = 0; i < per(unique, 100); i++) {
        const items = Math.min(100, unique - i * 100);
        read("DynamoDB.BatchGetItem", items, units(items, consistency));
      }
      return store.getNodes(id, nodeIds, consistency);
    },
    listNodes: async (id) => {
      const nodes = await store.listNodes(id);
      await queryShards(id, nodes.length, 400, 1);
      return nodes;
    },
    listMapItems: async (id, mapId, attempt, options) => {
      const items = await store.listMapItems(id, mapId, attempt, options);
      // A status-only listing reads small items eventually consistently (half the units).
      await queryShards(id, items.length, options?.statusOnly ? 60 : 400, options?.statusOnly ? 2 : 1);
      return items;
    },
    transitionNode: async (...args) => {
      // A cancellation is fenced on its execution: the node write and a check in one transaction.
      if (args[2].executionEnding) fencedWrite();
      else write();
      return store.transitionNode(...args);
    },
    failNode: async (...args) => {
      // A transaction of two items (the node and its execution's mark): 2 write units each.
      log.op("DynamoDB.TransactWriteItems");
      log.ddb.writeUnits += 4;
      return dueIndexed(args[0], () => store.failNode(...args));
    },
    recordArrival: async (request) => {
      if (request.outcome === "bad") fencedWrite();
      else write();
      return store.recordArrival(request);
    },
    recordShardArrival: async (request) => {
      write();
      return store.recordShardArrival(request);
    },
    getArrivalShards: async (id, childId, shards) => {
      const unique = new Set(shards).size;
      if (unique > 0) read("DynamoDB.BatchGetItem", unique);
      return store.getArrivalShards(id, childId, shards);
    },
    listHistory: async (id) => {
      await queryShards(id, 1, 0, 1);
      return store.listHistory(id);
    },
    listDueExecutions: async (now, limit) => {
      read("DynamoDB.Query");
      return store.listDueExecutions(now, limit);
    },
    pullSweepAt: async (id, at) => {
      write();
      return dueIndexed(id, () => store.pullSweepAt(id, at));
    },
    acquireLease: async (...args) => {
      write();
      return store.acquireLease(...args);
    },
    putTimers: async (timers) => {
      for (const _ of timers) write("DynamoDB.PutItem");
      return store.putTimers(timers);
    },
    getTimers: async (timers) => {
      // A BatchGetItem: a strongly consistent read unit per timer.
      read("DynamoDB.BatchGetItem", timers.length);
      return store.getTimers(timers);
    },
    listTimers: async (...args) => {
      const page = await store.listTimers(...args);
      read("DynamoDB.Query", Math.max(1, page.items.length), 1);
      return page;
    },
    getTimerCursor: async () => {
      read("DynamoDB.GetItem");
      return store.getTimerCursor();
    },
    advanceTimerCursor: async (cursor) => {
      write("DynamoDB.PutItem");
      return store.advanceTimerCursor(cursor);
    },
    putDeadLetter: async (record) => {
      write("DynamoDB.PutItem");
      return store.putDeadLetter(record);
    },
    listDeadLetters: async (page) => {
      read("DynamoDB.Query");
      return store.listDeadLetters(page);
    },
    getDeadLetter: async (id) => {
      read("DynamoDB.GetItem");
      return store.getDeadLetter(id);
    },
    deleteDeadLetter: async (id) => {
      write("DynamoDB.DeleteItem");
      return store.deleteDeadLetter(id);
    },
    putWorker: async (worker, deadBefore) => {
      write("DynamoDB.UpdateItem");
      return store.putWorker(worker, deadBefore);
    },
    pageWorkers: async (page, now) => {
      read("DynamoDB.Query");
      return store.pageWorkers(page, now);
    },
    getWorker: async (workerId) => {
      read("DynamoDB.GetItem");
      return store.getWorker(workerId);
    },
    listWorkers: async () => {
      read("DynamoDB.Query");
      return store.listWorkers();
    },
    touchWorker: async (workerId, now) => {
      write("DynamoDB.UpdateItem");
      return store.touchWorker(workerId, now);
    },
    deleteWorker: async (workerId, version) => {
      write("DynamoDB.DeleteItem");
      return store.deleteWorker(workerId, version);
    },
    offerTask: async (task) => {
      write("DynamoDB.PutItem");
      return store.offerTask(task);
    },
    listReadyTasks: async (pool, limit) => {
      read("DynamoDB.Query");
      return store.listReadyTasks(pool, limit);
    },
    withdrawTask: async (task) => {
      write("DynamoDB.DeleteItem");
      return store.withdrawTask(task);
    },
    takeTask: async (take) => {
      fencedWrite();
      return store.takeTask(take);
    },
    releaseHold: async (workerId, key, leaseToken) => {
      write("DynamoDB.UpdateItem");
      return store.releaseHold(workerId, key, leaseToken);
    },
  };
  const queue: TaskQueue = {
    send: async (messages, options) => {
      for (let i = 0; i < per(messages.length, 10); i++) {
        log.op("SQS.SendMessageBatch", Math.min(10, messages.length - i * 10));
        log.sqs.billedRequests += 1;
      }
      // Batches of 10 go out at once (sqs/queue.ts): one call's latency.
      if (latency && messages.length > 0) await latency();
      return ports.queue.send(messages, options);
    },
  };
  const events: EventPublisher = {
    publish: async (list) => {
      for (let i = 0; i < per(list.length, 10); i++)
        log.op("EventBridge.PutEvents", Math.min(10, list.length - i * 10));
      log.events.billedEvents += list.length;
      if (latency && list.length > 0) await latency();
      return ports.events.publish(list);
    },
  };
  const raw = ports.blobs;
  // Presigned requests are signed locally (no request); the client's own PUT/GET is its business.
  const blobs: BlobStore = {
    put: async (key, text) => {
      log.s3Request("PutObject", "put", key, Buffer.byteLength(text, "utf8"));
      if (latency) await latency();
      return raw.put(key, text);
    },
    get: async (key) => {
      log.s3Request("GetObject", "get", key);
      if (latency) await latency();
      return raw.get(key);
    },
    size: async (key) => {
      log.s3Request("HeadObject", "get", key);
      if (latency) await latency();
      return raw.size(key);
    },
    uploadRequest: (key, bytes, expiresInSeconds) => raw.uploadRequest(key, bytes, expiresInSeconds),
    downloadRequest: (key, expiresInSeconds) => raw.downloadRequest(key, expiresInSeconds),
  };
  return { ...ports, store: counted, blobs, queue, events };
}

/** The store with every method waiting `latency` first (none: the store itself). */
function withLatency(store: Store, latency: (() => Promise<void>) | undefined): Store {
  if (!latency) return store;
  return new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        await latency();
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
