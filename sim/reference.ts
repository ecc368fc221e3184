/**
 * A plain reference evaluator: what each node's output must be, computed straight from the
 * definition with no engine involved. `pass` → its value (or the input), `merge` → the outputs of
 * the dependencies that had completed when it became ready (its recorded okDeps; all parents for
 * `all`), `noop` → null, `sleep` → {sleptMs}, flaky `fail` → {attempt}, `wait` → {waitedSeconds}.
 */
import type { WorkflowDefinition } from "../shared/domain/definition.js";

export interface ReferenceFacts {
  input: unknown;
  /** Ids of the dependencies whose outputs the node saw (its okDeps when it became ready). */
  okDepsOf(nodeId: string): readonly string[];
  /** The attempt on which a flaky `fail` node passed (times + 1 unless attempts were lost to crashes). */
  passingAttemptOf(nodeId: string, times: number): number;
}

export function referenceOutputs(
  definition: WorkflowDefinition,
  facts: ReferenceFacts,
): Map<string, unknown> {
  const byId = new Map(definition.nodes.map((n) => [n.id, n]));
  const memo = new Map<string, unknown>();
  const evaluate = (id: string): unknown => {
    if (memo.has(id)) return memo.get(id);
    const node = byId.get(id);
    if (!node) throw new Error(`reference: unknown node ${id}`);
    const params = (node.params ?? {}) as Record<string, unknown>;
    let output: unknown;
    switch (node.type) {
      case "pass":
        output = "value" in params ? params.value : facts.input;
        break;
      case "noop":
        output = null;
        break;
      case "merge":
        output = Object.fromEntries(facts.okDepsOf(id).map((dep) => [dep, evaluate(dep)]));
        break;
      case "sleep":
        output = { sleptMs: params.ms };
        break;
      case "wait":
        output = { waitedSeconds: params.seconds };
        break;
      case "fail":
        output = { attempt: facts.passingAttemptOf(id, Number(params.times ?? Number.NaN)) };
        break;
      default:
        throw new Error(`reference: no rule for type ${node.type}`);
    }
    memo.set(id, output ?? null);
    return output ?? null;
  };
  for (const node of definition.nodes) evaluate(node.id);
  return memo;
}
