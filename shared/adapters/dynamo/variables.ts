/**
 * An execution's variables in DynamoDB (keys.ts `variablesKey`): one item, written whole by a Put
 * conditioned on the version it was read at (optimistic concurrency: engine/vars.ts re-reads and
 * retries a refused write), so concurrent writers never lose one another's changes.
 */
import type { VariablesItem } from "../../ports.js";
import { ATTR, variablesKey } from "./keys.js";
import type { TableIO } from "./table-io.js";
import { putAtVersion } from "./versioned.js";
import { expiresAfter } from "./writes.js";

const ATTRIBUTES = ["version", "document", "applied"] as const;

/**
 * Past its execution's end the item goes with it: it cannot know that end, so with a retention it
 * expires this long after its last write — an execution's longest deadline (366 days) plus the
 * retention.
 */
const LONGEST_EXECUTION_DAYS = 366;

export async function getVariables(io: TableIO, executionId: string): Promise<VariablesItem | undefined> {
  const item = await io.get(variablesKey(executionId), ATTRIBUTES);
  if (item === undefined) return undefined;
  return { version: Number(item.version), document: String(item.document), applied: String(item.applied) };
}

export async function putVariables(
  io: TableIO,
  executionId: string,
  item: VariablesItem,
  expectedVersion: number,
  now: number,
  retentionDays: number | undefined,
): Promise<boolean> {
  return putAtVersion(
    io,
    variablesKey(executionId),
    {
      version: item.version,
      document: item.document,
      applied: item.applied,
      ...(retentionDays === undefined
        ? {}
        : { [ATTR.ttl]: expiresAfter(now, LONGEST_EXECUTION_DAYS + retentionDays) }),
    },
    expectedVersion,
  );
}
