/**
 * Execution variables in the store (domain/vars.ts has the rules): read for the expressions that
 * mention `vars`, written by a `vars` node's operation and by a node's `assign`.
 *
 * One item per execution (Store.getVariables/putVariables), never the execution record that every
 * worker reads. A write is optimistic: read the item and its version, apply the operation, write it
 * back only if the version did not move; on a conflict read again and retry after a jittered pause
 * (the Clock port's sleep, the IdGenerator port's randomness), so concurrent `incr`s from parallel
 * nodes all count. The item also records which node applied which operation, with its result, in
 * the same write: a duplicate delivery or another attempt of the same node finds its record and
 * gives the recorded result again instead of applying twice.
 */
import { parseExact, stringifyExact } from "../domain/exact-numbers.js";
import type { ExpressionScope } from "../domain/expressions.js";
import type { GraphNode } from "../domain/graph.js";
import type { ExecutionRecord } from "../domain/records.js";
import {
  applyVarsOp,
  assignOp,
  checkVarsOp,
  encodeDocument,
  mentionsVars,
  opKeys,
  VARS_ERRORS,
  VARS_LIMITS,
  type VarsDocument,
  VarsError,
  type VarsOp,
  type VarsResult,
} from "../domain/vars.js";
import * as z from "../domain/zod.js";
import type { VariablesItem } from "../ports.js";
import type { EngineContext } from "./context.js";

/** How a write that lost a race tries again: full jitter over an exponential ceiling. */
export const VARS_RETRY = { maxRounds: 400, baseMs: 4, capMs: 500 } as const;

/**
 * The store could not take the write (a fault, or more conflicts than VARS_RETRY allows): no failure
 * of the node. It is left as it was, and the message being handled comes back to try again.
 */
export class VariablesUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "VariablesUnavailable";
  }
}

const documentSchema = z.record(z.string(), z.unknown());
const appliedSchema = z.record(z.string(), z.object({ a: z.number(), r: z.unknown() }));
type Applied = z.output<typeof appliedSchema>;

interface State {
  version: number;
  document: VarsDocument;
  applied: Applied;
}

/** The stored item, checked: it is an input like any other (written by an older version, or by hand). */
function decode(item: VariablesItem | undefined): State {
  if (item === undefined) return { version: 0, document: {}, applied: {} };
  return {
    version: item.version,
    document: documentSchema.parse(parseExact(item.document)),
    applied: appliedSchema.parse(parseExact(item.applied)),
  };
}

async function read(ctx: EngineContext, executionId: string): Promise<VariablesItem | undefined> {
  try {
    return await ctx.store.getVariables(executionId);
  } catch (cause) {
    throw new VariablesUnavailable("the variables could not be read", { cause });
  }
}

/** The execution's variables (`{}` before any was written). */
export async function readVariables(ctx: EngineContext, executionId: string): Promise<VarsDocument> {
  return decode(await read(ctx, executionId)).document;
}

/**
 * The execution's variables and the size of the item that holds them (the document and the record
 * of the nodes that wrote it: what each write of them costs, engine/cost-model.ts).
 */
export async function readVariablesSized(
  ctx: EngineContext,
  executionId: string,
): Promise<{ document: VarsDocument; bytes: number }> {
  const item = await read(ctx, executionId);
  const bytes = item === undefined ? 0 : Buffer.byteLength(item.document) + Buffer.byteLength(item.applied);
  return { document: decode(item).document, bytes };
}

/**
 * Applies `op` for `nodeId`'s `attempt` once. `perNode`: once per node whatever the attempt (a
 * `vars` node: a retried attempt must not count again); else once per attempt, a later attempt
 * applying again (an `assign`, whose output may differ) and an earlier one never after it.
 */
export async function applyVariables(
  ctx: EngineContext,
  executionId: string,
  nodeId: string,
  attempt: number,
  op: VarsOp,
  perNode: boolean,
): Promise<VarsResult> {
  const problem = checkVarsOp(op)[0];
  if (problem) throw new VarsError(problem);
  for (let round = 0; ; round++) {
    const state = decode(await read(ctx, executionId));
    const prior = state.applied[nodeId];
    if (prior && (perNode || prior.a >= attempt)) return prior.r as VarsResult;
    const { document, result } = applyVarsOp(state.document, op);
    const item: VariablesItem = {
      version: state.version + 1,
      document: encodeDocument(document),
      applied: stringifyExact({ ...state.applied, [nodeId]: { a: attempt, r: result } }) ?? "{}",
    };
    if (item.document.length + item.applied.length > VARS_LIMITS.maxItemBytes)
      throw new VarsError({
        field: "",
        code: VARS_ERRORS.documentTooLarge,
        message: `the variables and the record of the nodes that wrote them would pass ${VARS_LIMITS.maxItemBytes} bytes`,
      });
    let written: boolean;
    try {
      written = await ctx.store.putVariables(executionId, item, state.version, ctx.clock.now());
    } catch (cause) {
      throw new VariablesUnavailable("the variables could not be written", { cause });
    }
    if (written) {
      // Names and counts only: values may be anything, secrets that slipped through included.
      const keys = opKeys(op);
      ctx.logger.info("variables written", {
        executionId,
        nodeId,
        op: op.op,
        keys: keys.slice(0, 20),
        keyCount: keys.length,
        version: item.version,
        conflicts: round,
      });
      return result;
    }
    if (round + 1 >= VARS_RETRY.maxRounds)
      throw new VariablesUnavailable(
        `the variables changed under ${VARS_RETRY.maxRounds} writes in a row; the write is tried again later`,
      );
    const ceiling = Math.min(VARS_RETRY.capMs, VARS_RETRY.baseMs * 2 ** Math.min(round, 16));
    await ctx.clock.sleep(Math.floor(ctx.ids.random() * ceiling));
  }
}

/**
 * A node's `assign`, evaluated once its output is known over its own scope — `input`, `deps`,
 * `execution`, `vars` — with the output as `$output`, then set (as one `set` operation, secret-
 * looking values refused) before its completion is written, so the dependants that completion
 * dispatches see it. Nothing to do for a node without one.
 */
export async function applyAssign(
  ctx: EngineContext,
  execution: ExecutionRecord,
  node: GraphNode,
  attempt: number,
  /** The node's scope (prepare.ts expressionScope), without `vars`: read here if `assign` mentions them. */
  scope: ExpressionScope,
  output: unknown,
): Promise<void> {
  if (node.assign === undefined) return;
  const full = { ...scope };
  if (mentionsVars(node.assign)) full.vars = await readVariables(ctx, execution.executionId);
  const values = await ctx.expressions.resolve(
    node.assign,
    full,
    { now: () => ctx.clock.now(), bindings: { output } },
    "assign",
  );
  const record = documentSchema.safeParse(values);
  if (!record.success) return;
  await applyVariables(ctx, execution.executionId, node.id, attempt, assignOp(record.data), false);
}
