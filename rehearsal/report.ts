/** The rehearsal's output: one line per step and per check, then the IAM report. */
import type { ResolveScope } from "./cfn/intrinsics.js";
import { type Deployment, shortName } from "./deployment.js";
import { type GrantLedger, isPlatformGrant } from "./iam/ledger.js";

export interface CheckResult {
  name: string;
  ok: boolean;
  ms: number;
  detail: string;
}

export function say(text: string): void {
  process.stdout.write(`${text}\n`);
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export function checkLine(result: CheckResult): string {
  return `${result.ok ? "PASS" : "FAIL"}  ${result.name}  (${seconds(result.ms)})${result.detail ? ` — ${result.detail}` : ""}`;
}

/** ARNs with the physical names replaced by `<LogicalId>`, for reading. */
export function symbolic(scope: ResolveScope): (text: string) => string {
  const names: Array<[string, string]> = [];
  for (const [logicalId, resource] of scope.resources) {
    for (const value of [resource.ref, resource.attributes.Arn]) {
      if (value && value.length >= 8) names.push([value, `<${logicalId}>`]);
    }
  }
  names.sort((a, b) => b[0].length - a[0].length);
  return (text) => {
    let out = text;
    for (const [physical, logical] of names) out = out.split(physical).join(logical);
    return out;
  };
}

/** Per role: every grant (action × resource pattern) with how often it was used and by whom. */
export function grantsReport(ledger: GrantLedger, render: (text: string) => string): string[] {
  const lines: string[] = [];
  for (const principal of ledger.principalNames()) {
    const grants = ledger.grantsOf(principal).filter((grant) => !isPlatformGrant(grant));
    const unused = grants.filter((grant) => ledger.useOf(principal, grant).calls === 0);
    lines.push(
      `  ${principal}: ${grants.length} grants (action × resource, platform ones aside), ${unused.length} unused`,
    );
    for (const grant of grants) {
      const { calls, callers } = ledger.useOf(principal, grant);
      const by = callers.filter((caller) => caller !== "handler");
      lines.push(
        calls === 0
          ? `    UNUSED   ${grant.action} on ${render(grant.resource)}`
          : `    used ×${String(calls).padEnd(4)} ${grant.action} on ${render(grant.resource)}${by.length > 0 ? ` (by the ${by.join(", ")})` : ""}`,
      );
    }
  }
  return lines;
}

/** What the functions, the event sources, the schedule and the gateway did. */
export function deploymentSummary(deployment: Deployment, sweepIntervalMs: number): string[] {
  const lines: string[] = [];
  for (const [id, pool] of deployment.pools) {
    const s = pool.stats;
    lines.push(
      `function ${shortName(id)}: ${s.invocations} invocations (${s.coldStarts} cold starts, ${s.errors} errors, ${s.timeouts} timeouts, ${s.crashes} crashes)`,
    );
  }
  for (const source of deployment.sources) {
    const s = source.stats;
    lines.push(
      `event source ${source.mapping.logicalId}: ${s.batches} batches, ${s.records} records, ${s.deleted} deleted, ${s.reportedFailures} reported failed, ${s.failedInvocations} failed invocations`,
    );
  }
  lines.push(
    `sweeper: ${deployment.sweeps.runs} scheduled runs (every ${seconds(sweepIntervalMs)} instead of every minute), ${deployment.sweeps.recoveredLeases} leases recovered`,
  );
  const statuses = [...deployment.api.statuses.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([s, n]) => `${s}×${n}`);
  lines.push(`API Gateway answers: ${statuses.join(", ")}`);
  return lines;
}
