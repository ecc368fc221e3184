/** Human-readable summaries of runs. */
import type { DependencyEntry } from "../shared/domain/edges.js";
import { openFindingOf } from "./open-findings.js";
import type { RunResult } from "./world.js";

export function formatResult(result: RunResult, options: { traceLines?: number } = {}): string {
  const p = result.profile;
  const lines = [
    `seed ${result.seed}: ${result.violations.length === 0 ? "OK" : `${result.violations.length} VIOLATION(S)`} — ended ${result.end} after ${result.steps} steps, ${(result.virtualMs / 1000).toFixed(1)} s virtual, trace ${result.traceHash}`,
    `  profile: ${p.executions} execution(s) of ${p.workflows} workflow(s), ${p.engines} engine(s), ≤${p.workers} workers, lease ${p.leaseSeconds} s, visibility ${p.visibilitySeconds} s, grace ${p.sweep.graceMs} ms; crash ${p.crash}, stall ${p.stall}, port errors ${p.portErrorBefore}/${p.portErrorAfter}, dup send/receive ${p.duplicateSend}/${p.duplicateReceive}, delay ${p.extraDelay}, cancel ${p.cancel}, two-step ${p.twoStep}; fan-in read ≤${p.fanIn.readMaxParents}, shards of ${p.fanIn.shardSize}, batches of ${p.batchSize}, stale reads ${p.staleReads}; inline ≤${p.payloads.inlineBytes} B, parts ≤${p.payloads.maxPartsBytes} B; creates again ${p.duplicateCreate}, with another request ${p.conflictingCreate}`,
    ...result.workflows.map(
      (w) =>
        `  ${w.name}: ${w.nodes
          .map(
            (n) =>
              `${n.id}${
                n.dependsOn ? `←[${n.dependsOn.map(dependencyShort).join(",")}]` : ""
              }${n.fanIn && n.fanIn !== "all" ? `(${n.fanIn})` : ""}${flowOf(n)}`,
          )
          .join(" ")}`,
    ),
    `  executions: ${result.executions.map((e) => `${e.executionId}(${e.workflow}) ${e.status}`).join(", ") || "none"}`,
    `  stats: ${Object.entries(result.stats)
      .filter(([, v]) => v !== 0)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  ];
  for (const v of result.violations) {
    const finding = openFindingOf(v);
    lines.push(
      `  VIOLATION [${v.rule}]${finding ? ` (open finding ${finding.id})` : ""} ${v.executionId ?? ""}${v.nodeId ? `/${v.nodeId}` : ""}: ${v.message}`,
    );
  }
  for (const w of result.warnings)
    lines.push(`  warning [${w.rule}] ${w.executionId ?? ""}${w.nodeId ? `/${w.nodeId}` : ""}: ${w.message}`);
  const tail = options.traceLines ?? 0;
  if (tail > 0 && result.violations.length > 0) {
    lines.push(`  last ${tail} trace lines:`);
    for (const line of result.trace.slice(-tail)) lines.push(`    ${line}`);
  }
  return lines.join("\n");
}

/** A node's flow control, briefly: ` when{% … %}`, ` continue`, ` params{% %}`. */
function flowOf(node: RunResult["workflows"][number]["nodes"][number]): string {
  const parts: string[] = [];
  if (node.type === "callback")
    parts.push(`callback${(node.params as { timeoutSeconds?: number }).timeoutSeconds}s`);
  if (node.runsOn)
    parts.push(
      `@${node.runsOn.pool}${node.runsOn.maxParallelPerWorker ? `×${node.runsOn.maxParallelPerWorker}` : ""}`,
    );
  if (node.when !== undefined) parts.push(`when${node.when.replace(/\s+/g, "")}`);
  if (node.onError === "continue") parts.push("continue");
  if (node.type === "fail" && (node.params as { times?: number } | undefined)?.times !== undefined)
    parts.push(`times${(node.params as { times: number }).times}`);
  if (JSON.stringify(node.params ?? {}).includes("{%")) parts.push("params{%}");
  return parts.length > 0 ? `{${parts.join(" ")}}` : "";
}

/** `n3` for a plain dependency; `n3!` a catch edge on failure, `n3~` on always, `{names}` its errors. */
function dependencyShort(entry: DependencyEntry): string {
  if (typeof entry === "string") return entry.split("-")[0]!;
  const mark = entry.on === "failure" ? "!" : entry.on === "always" ? "~" : "";
  return `${entry.node.split("-")[0]}${mark}${entry.errors ? `{${entry.errors.join("|")}}` : ""}`;
}
