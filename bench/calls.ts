/**
 * Counting AWS API calls: an AWS SDK v3 middleware on each client's middlewareStack records every
 * command by name, asks DynamoDB for ReturnConsumedCapacity: "TOTAL" on every command that supports
 * it (summing what comes back), and models DynamoDB capacity from item sizes (capacity.ts). S3
 * requests are counted by price class (PUT-class and GET-class), with the bytes they store.
 */
import { ATTR } from "../shared/adapters/dynamo/keys.js";
import {
  type AvItem,
  INDEXES,
  indexWriteCharges,
  itemSize,
  readUnits,
  toAv,
  writeUnits,
} from "./capacity.js";
import type { PartitionTally } from "./capacity-partitions.js";

export interface OpStats {
  calls: number;
  /** Entries/messages/transaction actions/keys the calls carried (1 per call for single-item calls). */
  items: number;
  failed: number;
}

export class CallLog {
  ops: Record<string, OpStats> = {};
  ddb = {
    /** Modeled (capacity.ts): table write units, index write units, read units. */
    writeUnits: 0,
    indexWriteUnits: 0,
    readUnits: 0,
    /** What the endpoint reported through ReturnConsumedCapacity, and how many responses carried any. */
    reportedUnits: 0,
    reportedResponses: 0,
  };
  sqs = { billedRequests: 0, emptyReceives: 0, deadLetterReceives: 0 };
  events = { billedEvents: 0 };
  s3 = emptyS3();
  worker = { invocations: 0, records: 0, durationsMs: [] as number[] };
  /** Last known full item per key, to size reads and the "before" of writes. */
  readonly knownItems = new Map<string, AvItem>();
  /** Bytes under each S3 key written since the last reset (a key written again replaces its object). */
  readonly s3Objects = new Map<string, number>();
  /** DynamoDB use by partition, when someone asks (bench --capacity; capacity-partitions.ts). */
  partitions: PartitionTally | undefined;

  op(name: string, items = 1, failed = false): void {
    const stats = this.ops[name] ?? { calls: 0, items: 0, failed: 0 };
    this.ops[name] = stats;
    stats.calls += 1;
    stats.items += items;
    if (failed) stats.failed += 1;
  }

  /** Clears the counts (not the known items). */
  reset(): void {
    this.ops = {};
    this.ddb = { writeUnits: 0, indexWriteUnits: 0, readUnits: 0, reportedUnits: 0, reportedResponses: 0 };
    this.sqs = { billedRequests: 0, emptyReceives: 0, deadLetterReceives: 0 };
    this.events = { billedEvents: 0 };
    this.s3 = emptyS3();
    this.s3Objects.clear();
    this.partitions?.reset();
    this.worker = { invocations: 0, records: 0, durationsMs: [] };
  }

  /** One S3 request: `put` for the PUT/COPY/POST/LIST price class, else the GET class (GET, HEAD). */
  s3Request(op: string, priceClass: "put" | "get", key?: string, bytes?: number, failed = false): void {
    this.op(`S3.${op}`, 1, failed);
    if (priceClass === "put") this.s3.putRequests += 1;
    else this.s3.getRequests += 1;
    if (op === "PutObject" && !failed && key !== undefined && bytes !== undefined) {
      this.s3.putBytes += bytes;
      this.s3.storedBytes += bytes - (this.s3Objects.get(key) ?? 0);
      this.s3Objects.set(key, bytes);
      this.s3.objects = this.s3Objects.size;
    }
  }

  snapshot(): Pick<CallLog, "ops" | "ddb" | "sqs" | "events" | "s3" | "worker"> {
    return structuredClone({
      ops: this.ops,
      ddb: this.ddb,
      sqs: this.sqs,
      events: this.events,
      s3: this.s3,
      worker: this.worker,
    });
  }
}

function emptyS3() {
  return {
    /** PUT/COPY/POST/LIST-class requests (billed at the PUT price). */
    putRequests: 0,
    /** GET/HEAD (and every other) requests. */
    getRequests: 0,
    /** Bytes sent by PutObject (a repeated PUT counted each time). */
    putBytes: 0,
    /** Distinct objects written and their bytes: what the bucket keeps until the retention expires them. */
    objects: 0,
    storedBytes: 0,
  };
}

type Args = { input: object };
type Out = { output: object };
type Middleware = (
  next: (args: Args) => Promise<Out>,
  context: { commandName?: string },
) => (args: Args) => Promise<Out>;
interface Stack {
  add(middleware: Middleware, options: { step: "initialize"; name: string; override: boolean }): void;
}
type Loose = Record<string, unknown>;

const SUPPORTS_CONSUMED_CAPACITY = new Set([
  "GetItem",
  "PutItem",
  "UpdateItem",
  "DeleteItem",
  "Query",
  "Scan",
  "BatchGetItem",
  "BatchWriteItem",
  "TransactWriteItems",
  "TransactGetItems",
]);

const CHUNK = 64 * 1024;
const chunks = (bytes: number) => Math.max(1, Math.ceil(bytes / CHUNK));

function addMiddleware(client: { middlewareStack: unknown }, middleware: Middleware): void {
  (client.middlewareStack as Stack).add(middleware, {
    step: "initialize",
    name: "weftBenchCallCounter",
    override: true,
  });
}

const opName = (context: { commandName?: string }) =>
  (context.commandName ?? "Unknown").replace(/Command$/, "");

// ── DynamoDB ──────────────────────────────────────────────────────────────────────────────────────

const docKey = (key: Loose | undefined) => (key ? `${String(key.pk)}|${String(key.sk)}` : "");

function reported(log: CallLog, output: Loose): void {
  const consumed = output.ConsumedCapacity as Loose | Loose[] | undefined;
  if (consumed === undefined) return;
  const list = Array.isArray(consumed) ? consumed : [consumed];
  if (list.length === 0) return;
  log.ddb.reportedResponses += 1;
  for (const c of list) {
    log.ddb.reportedUnits +=
      Number(c.CapacityUnits ?? 0) || Number(c.WriteCapacityUnits ?? 0) + Number(c.ReadCapacityUnits ?? 0);
  }
}

const pkOf = (key: string) => key.slice(0, key.indexOf("|"));

/** Table write units charged to the item's partition. */
function chargeWrite(log: CallLog, key: string, units: number): void {
  log.ddb.writeUnits += units;
  log.partitions?.charge({ pk: pkOf(key) }, "write", units);
}

function chargeRead(log: CallLog, pk: string, units: number, consistent: boolean, index?: string): void {
  log.ddb.readUnits += units;
  log.partitions?.charge(index === undefined ? { pk } : { index, pk }, "read", units, consistent);
}

/** The partition a Query reads: the value its key condition gives the table's (or index's) hash key. */
function queryPk(input: Loose): string {
  const names = (input.ExpressionAttributeNames as Record<string, string> | undefined) ?? {};
  const values = (input.ExpressionAttributeValues as Loose | undefined) ?? {};
  const index = INDEXES.find((i) => i.name === input.IndexName);
  const hash = index ? index.hash : ATTR.pk;
  for (const match of String(input.KeyConditionExpression ?? "").matchAll(/([#\w]+)\s*=\s*(:\w+)/g)) {
    const name = match[1]!.startsWith("#") ? names[match[1]!] : match[1];
    if (name === hash) return String(values[match[2]!]);
  }
  return "(scan)";
}

/** One modeled write: table units from the larger image, index units from the change. */
function modelWrite(log: CallLog, key: string, after: AvItem | undefined, factor = 1): void {
  const before = log.knownItems.get(key);
  const size = Math.max(before ? itemSize(before) : 0, after ? itemSize(after) : 0);
  chargeWrite(log, key, writeUnits(size) * factor);
  for (const charge of indexWriteCharges(before, after)) {
    log.ddb.indexWriteUnits += charge.units * factor;
    log.partitions?.charge({ index: charge.index, pk: charge.pk }, "write", charge.units * factor);
  }
  if (after) log.knownItems.set(key, after);
  else log.knownItems.delete(key);
}

function readSize(log: CallLog, key: string, returned: AvItem | undefined): number {
  const known = log.knownItems.get(key);
  return known ? itemSize(known) : returned ? itemSize(returned) : 0;
}

function modelDynamo(
  log: CallLog,
  op: string,
  input: Loose,
  output: Loose | undefined,
  error: unknown,
): void {
  const consistent = input.ConsistentRead === true;
  switch (op) {
    case "PutItem": {
      const key = docKey(input.Item as Loose);
      if (output) {
        modelWrite(log, key, toAv(input.Item as Loose));
        return;
      }
      chargeWrite(log, key, writeUnits(readSize(log, key, (error as Loose)?.Item as AvItem | undefined)));
      return;
    }
    case "UpdateItem": {
      const key = docKey(input.Key as Loose);
      if (output) {
        const attributes = output.Attributes as Loose | undefined;
        modelWrite(log, key, attributes ? toAv(attributes) : log.knownItems.get(key));
        return;
      }
      // A refused conditional write costs the size of the item found (min 1).
      const found = (error as Loose)?.Item as AvItem | undefined;
      chargeWrite(log, key, writeUnits(found ? itemSize(found) : readSize(log, key, undefined)));
      return;
    }
    case "DeleteItem": {
      const key = docKey(input.Key as Loose);
      if (output) {
        modelWrite(log, key, undefined);
        return;
      }
      chargeWrite(log, key, writeUnits(readSize(log, key, undefined)));
      return;
    }
    case "GetItem": {
      const item = output?.Item as Loose | undefined;
      const key = docKey(input.Key as Loose);
      chargeRead(log, pkOf(key), readUnits(readSize(log, key, item && toAv(item)), consistent), consistent);
      return;
    }
    case "BatchGetItem": {
      for (const request of Object.values((input.RequestItems as Record<string, Loose>) ?? {})) {
        for (const key of (request.Keys as Loose[]) ?? []) {
          const strong = request.ConsistentRead === true;
          chargeRead(log, String(key.pk), readUnits(readSize(log, docKey(key), undefined), strong), strong);
        }
      }
      return;
    }
    case "Query":
    case "Scan": {
      const items = (output?.Items as Loose[] | undefined) ?? [];
      const onIndex = input.IndexName !== undefined;
      const total = items.reduce(
        (sum, item) => sum + (onIndex ? itemSize(toAv(item)) : readSize(log, docKey(item), toAv(item))),
        0,
      );
      const strong = consistent && !onIndex;
      chargeRead(
        log,
        queryPk(input),
        readUnits(total, strong),
        strong,
        onIndex ? String(input.IndexName) : undefined,
      );
      return;
    }
    case "TransactWriteItems": {
      for (const action of (input.TransactItems as Loose[]) ?? []) {
        const put = action.Put as Loose | undefined;
        const update = action.Update as Loose | undefined;
        const check = action.ConditionCheck as Loose | undefined;
        const del = action.Delete as Loose | undefined;
        if (put) {
          const key = docKey(put.Item as Loose);
          if (output) modelWrite(log, key, toAv(put.Item as Loose), 2);
          else chargeWrite(log, key, 2 * writeUnits(readSize(log, key, undefined)));
        } else if (update || del || check) {
          const key = docKey(((update ?? del ?? check) as Loose).Key as Loose);
          chargeWrite(log, key, 2 * writeUnits(readSize(log, key, undefined)));
          if (del && output) log.knownItems.delete(key);
        }
      }
      return;
    }
    case "TransactGetItems": {
      for (const action of (input.TransactItems as Loose[]) ?? []) {
        const get = action.Get as Loose | undefined;
        if (get) {
          const key = docKey(get.Key as Loose);
          chargeRead(log, pkOf(key), 2 * readUnits(readSize(log, key, undefined), true), true);
        }
      }
      return;
    }
    default:
      return;
  }
}

function dynamoItems(op: string, input: Loose): number {
  if (op === "TransactWriteItems" || op === "TransactGetItems")
    return ((input.TransactItems as unknown[]) ?? []).length;
  if (op === "BatchGetItem")
    return Object.values((input.RequestItems as Record<string, Loose>) ?? {}).reduce(
      (sum, r) => sum + ((r.Keys as unknown[]) ?? []).length,
      0,
    );
  return 1;
}

export function instrumentDynamo(client: { middlewareStack: unknown }, log: CallLog): void {
  addMiddleware(client, (next, context) => async (args) => {
    const op = opName(context);
    const input: Loose = SUPPORTS_CONSUMED_CAPACITY.has(op)
      ? { ...(args.input as Loose), ReturnConsumedCapacity: "TOTAL" }
      : (args.input as Loose);
    try {
      const result = await next({ ...args, input });
      log.partitions?.beginCall();
      log.op(`DynamoDB.${op}`, dynamoItems(op, input));
      reported(log, result.output as Loose);
      modelDynamo(log, op, input, result.output as Loose, undefined);
      return result;
    } catch (error) {
      log.op(`DynamoDB.${op}`, dynamoItems(op, input), true);
      log.partitions?.beginCall();
      modelDynamo(log, op, input, undefined, error);
      throw error;
    }
  });
}

// ── SQS and EventBridge ───────────────────────────────────────────────────────────────────────────

export function instrumentSqs(
  client: { middlewareStack: unknown },
  log: CallLog,
  deadLetterUrl?: string,
): void {
  addMiddleware(client, (next, context) => async (args) => {
    const op = opName(context);
    const input = args.input as Loose;
    const result = await next(args);
    const output = result.output as Loose;
    const entries = (input.Entries as Loose[] | undefined) ?? [];
    switch (op) {
      case "SendMessageBatch": {
        const bytes = entries.reduce((sum, e) => sum + Buffer.byteLength(String(e.MessageBody ?? "")), 0);
        log.op("SQS.SendMessageBatch", entries.length);
        log.sqs.billedRequests += chunks(bytes);
        break;
      }
      case "SendMessage":
        log.op("SQS.SendMessage");
        log.sqs.billedRequests += chunks(Buffer.byteLength(String(input.MessageBody ?? "")));
        break;
      case "ReceiveMessage": {
        const messages = ((output.Messages as unknown[]) ?? []).length;
        if (deadLetterUrl !== undefined && input.QueueUrl === deadLetterUrl) {
          // The DLQ function's event source polling an (here) empty queue: idle cost, not per node.
          log.op("SQS.ReceiveMessage(DLQ)", messages);
          log.sqs.deadLetterReceives += 1;
        } else if (messages === 0) {
          log.op("SQS.ReceiveMessage(empty)", 0);
          log.sqs.emptyReceives += 1;
        } else {
          log.op("SQS.ReceiveMessage", messages);
          log.sqs.billedRequests += 1;
        }
        break;
      }
      case "DeleteMessageBatch":
        log.op("SQS.DeleteMessageBatch", entries.length);
        log.sqs.billedRequests += 1;
        break;
      default:
        log.op(`SQS.${op}`);
        log.sqs.billedRequests += 1;
    }
    return result;
  });
}

export function instrumentEventBridge(client: { middlewareStack: unknown }, log: CallLog): void {
  addMiddleware(client, (next, context) => async (args) => {
    const op = opName(context);
    const input = args.input as Loose;
    const result = await next(args);
    const entries = (input.Entries as Loose[] | undefined) ?? [];
    log.op(`EventBridge.${op}`, op === "PutEvents" ? entries.length : 1);
    if (op === "PutEvents") {
      for (const entry of entries)
        log.events.billedEvents += chunks(Buffer.byteLength(JSON.stringify(entry)));
    }
    return result;
  });
}

// ── S3 ────────────────────────────────────────────────────────────────────────────────────────────

/** S3 operations billed at the PUT price (S3 Standard: PUT, COPY, POST, LIST). */
const S3_PUT_CLASS = new Set([
  "PutObject",
  "CopyObject",
  "PostObject",
  "ListObjects",
  "ListObjectsV2",
  "ListObjectVersions",
  "CreateMultipartUpload",
  "UploadPart",
  "CompleteMultipartUpload",
]);

const bodyBytes = (body: unknown): number | undefined => {
  if (typeof body === "string") return Buffer.byteLength(body, "utf8");
  if (body instanceof Uint8Array) return body.byteLength;
  return undefined;
};

export function instrumentS3(client: { middlewareStack: unknown }, log: CallLog): void {
  addMiddleware(client, (next, context) => async (args) => {
    const op = opName(context);
    const input = args.input as Loose;
    const priceClass = S3_PUT_CLASS.has(op) ? "put" : "get";
    const key = typeof input.Key === "string" ? input.Key : undefined;
    try {
      const result = await next(args);
      log.s3Request(op, priceClass, key, bodyBytes(input.Body));
      return result;
    } catch (error) {
      // A refused or missing-object request is billed too.
      log.s3Request(op, priceClass, key, undefined, true);
      throw error;
    }
  });
}
