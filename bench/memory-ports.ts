/**
 * The in-memory backend makes no AWS calls, so its ports are wrapped to record the calls the AWS
 * adapters would make for the same port calls (shared/adapters/dynamo/store.ts, sqs/queue.ts,
 * eventbridge/publisher.ts): one UpdateItem per conditional transition, a GetItem per single read,
 * BatchGetItem per 100 keys, SendMessageBatch per 10 messages, and so on. Capacity is a floor:
 * 1 WCU per write (items ≤ 1 KB), 2 per transactional item, 1 RCU per item read (≤ 4 KB, consistent).
 * The moto backend measures the real calls and models capacity from real item sizes.
 */
import type { EnginePorts, EventPublisher, Store, TaskQueue } from "../shared/ports.js";
import type { CallLog } from "./calls.js";

const per = (n: number, size: number) => Math.ceil(n / size);

export function countingPorts(ports: EnginePorts, log: CallLog): EnginePorts {
  const store = ports.store;
  const write = (op = "DynamoDB.UpdateItem") => {
    log.op(op);
    log.ddb.writeUnits += 1;
  };
  const read = (op: string, items = 1, units = items) => {
    log.op(op, items);
    log.ddb.readUnits += units;
  };
  const counted: Store = {
    getWorkflowVersion: async (name, version) => {
      read(version === undefined ? "DynamoDB.Query" : "DynamoDB.GetItem");
      return store.getWorkflowVersion(name, version);
    },
    findWorkflowVersionByHash: async (name, hash) => {
      read("DynamoDB.GetItem");
      return store.findWorkflowVersionByHash(name, hash);
    },
    putWorkflowVersion: async (record) => {
      log.op("DynamoDB.TransactWriteItems", 3);
      log.ddb.writeUnits += 6;
      return store.putWorkflowVersion(record);
    },
    createExecution: async (record, event) => {
      if (record.idempotencyKey === undefined) write("DynamoDB.PutItem");
      else {
        log.op("DynamoDB.TransactWriteItems", 2);
        log.ddb.writeUnits += 4;
      }
      // The new execution enters the listing indexes gsi1, gsi3 and the due index gsi2.
      log.ddb.indexWriteUnits += 3;
      return store.createExecution(record, event);
    },
    getExecution: async (id) => {
      read("DynamoDB.GetItem");
      return store.getExecution(id);
    },
    transitionExecution: async (id, from, patch, event, guard) => {
      write();
      // The listing indexes are keys-only (no write on a status change); finishing leaves the due index.
      if (patch.sweepAt === null) log.ddb.indexWriteUnits += 1;
      return store.transitionExecution(id, from, patch, event, guard);
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
    getNodes: async (id, nodeIds) => {
      const unique = new Set(nodeIds).size;
      for (let i = 0; i < per(unique, 100); i++)
        read("DynamoDB.BatchGetItem", Math.min(100, unique - i * 100));
      return store.getNodes(id, nodeIds);
    },
    listNodes: async (id) => {
      const nodes = await store.listNodes(id);
      read("DynamoDB.Query", nodes.length, Math.max(1, per(nodes.length * 400, 4096)));
      return nodes;
    },
    transitionNode: async (...args) => {
      write();
      return store.transitionNode(...args);
    },
    failNode: async (...args) => {
      // A transaction of two items (the node and its execution's mark): 2 write units each.
      log.op("DynamoDB.TransactWriteItems");
      log.ddb.writeUnits += 4;
      return store.failNode(...args);
    },
    recordArrival: async (request) => {
      write();
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
      read("DynamoDB.Query");
      return store.listHistory(id);
    },
    listDueExecutions: async (now, limit) => {
      read("DynamoDB.Query");
      return store.listDueExecutions(now, limit);
    },
    pullSweepAt: async (id, at) => {
      write();
      return store.pullSweepAt(id, at);
    },
    acquireLease: async (...args) => {
      write();
      return store.acquireLease(...args);
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
  };
  const queue: TaskQueue = {
    send: async (messages, options) => {
      for (let i = 0; i < per(messages.length, 10); i++) {
        log.op("SQS.SendMessageBatch", Math.min(10, messages.length - i * 10));
        log.sqs.billedRequests += 1;
      }
      return ports.queue.send(messages, options);
    },
  };
  const events: EventPublisher = {
    publish: async (list) => {
      for (let i = 0; i < per(list.length, 10); i++)
        log.op("EventBridge.PutEvents", Math.min(10, list.length - i * 10));
      log.events.billedEvents += list.length;
      return ports.events.publish(list);
    },
  };
  return { ...ports, store: counted, queue, events };
}
