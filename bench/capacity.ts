/**
 * DynamoDB capacity, modeled from item sizes by DynamoDB's published rules (moto reports fixed
 * placeholder values, so its numbers are kept only for reference):
 * - item size: attribute names (UTF-8) + values; strings/binary by length, numbers ~1 byte per two
 *   significant digits + 1, booleans/null 1, lists/maps 3 bytes + 1 per element (+ the key names);
 * - a write costs 1 WCU per started KB of the larger of the item before and after (min 1), a
 *   refused conditional write the size of the item found (min 1); transactional writes cost 2×;
 * - a read costs 1 RCU per started 4 KB strongly consistent, 0.5 eventually (a projection does not
 *   reduce it: the whole item counts); a Query rounds the sum of the items read, a BatchGetItem each item;
 * - a global secondary index costs its own writes: put/delete of an entry 1 per KB of the entry
 *   (projected attributes + 100 bytes), a key change 2 (delete + put), an update of a projected
 *   attribute 1; other updates of the item cost the index nothing.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { marshall } from "@aws-sdk/util-dynamodb";
import { ATTR } from "../shared/adapters/dynamo/keys.js";

export type AvItem = Record<string, AttributeValue>;

const utf8 = (text: string) => Buffer.byteLength(text, "utf8");

function numberSize(text: string): number {
  const digits = text.replace(/^-/, "").replace(/e.*$/i, "").replace(".", "").replace(/^0+/, "");
  return Math.ceil(Math.max(digits.length, 1) / 2) + 1;
}

export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, v) => sum + 1 + valueSize(v), 0);
  if (value.M !== undefined)
    return 3 + Object.entries(value.M).reduce((sum, [k, v]) => sum + 1 + utf8(k) + valueSize(v), 0);
  return 0;
}

export function itemSize(item: AvItem): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueSize(value), 0);
}

/** A document-client value (plain JS, Sets) as attribute values. */
export function toAv(item: Record<string, unknown>): AvItem {
  return marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: true });
}

export const writeUnits = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));
export const readUnits = (bytes: number, consistent: boolean) =>
  Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);

interface IndexShape {
  name: string;
  hash: string;
  range: string;
  projected: readonly string[] | "KEYS_ONLY";
}

/** The table's indexes as shared/adapters/dynamo/table.ts creates them. */
export const INDEXES: readonly IndexShape[] = [
  { name: "gsi1", hash: ATTR.gsi1pk, range: ATTR.gsi1sk, projected: "KEYS_ONLY" },
  { name: "gsi2", hash: ATTR.gsi2pk, range: ATTR.gsi2sk, projected: "KEYS_ONLY" },
];

function indexEntry(index: IndexShape, item: AvItem | undefined): AvItem | undefined {
  if (!item || item[index.hash] === undefined || item[index.range] === undefined) return undefined;
  const names = [
    ATTR.pk,
    ATTR.sk,
    index.hash,
    index.range,
    ...(index.projected === "KEYS_ONLY" ? [] : index.projected),
  ];
  const entry: AvItem = {};
  for (const name of names) if (item[name] !== undefined) entry[name] = item[name]!;
  return entry;
}

const same = (a: AttributeValue | undefined, b: AttributeValue | undefined) =>
  JSON.stringify(a) === JSON.stringify(b);

/** Index write units of one item changing from `before` to `after` (undefined = absent). */
export function indexWriteUnits(before: AvItem | undefined, after: AvItem | undefined): number {
  return indexWriteCharges(before, after).reduce((sum, charge) => sum + charge.units, 0);
}

/** The same, by index partition: each charge on the index entry's partition key (old, new, or both). */
export function indexWriteCharges(
  before: AvItem | undefined,
  after: AvItem | undefined,
): Array<{ index: string; pk: string; units: number }> {
  const charges: Array<{ index: string; pk: string; units: number }> = [];
  for (const index of INDEXES) {
    const old = indexEntry(index, before);
    const next = indexEntry(index, after);
    const charge = (entry: AvItem) =>
      charges.push({
        index: index.name,
        pk: entry[index.hash]?.S ?? "",
        units: writeUnits(itemSize(entry) + 100),
      });
    if (!old && next) charge(next);
    else if (old && !next) charge(old);
    else if (old && next) {
      const keyChanged =
        !same(old[index.hash], next[index.hash]) || !same(old[index.range], next[index.range]);
      if (keyChanged) {
        charge(old);
        charge(next);
      } else if (Object.keys({ ...old, ...next }).some((k) => !same(old[k], next[k]))) charge(next);
    }
  }
  return charges;
}
