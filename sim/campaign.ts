/**
 * A campaign: many seeds in a row, stopping (by default) at the first that violates an invariant —
 * but not at one whose every violation is an open finding (open-findings.ts): those are counted as
 * failing and listed apart.
 */
import { openFindingOf } from "./open-findings.js";
import { formatResult } from "./report.js";
import { type RunResult, runWorld } from "./world.js";

export interface CampaignOptions {
  runs: number;
  start: number;
  stopAtFirstFailure?: boolean;
  /** Operators redrive dead letters too (WorldOptions.redrive, default true). */
  redrive?: boolean;
  /** Workflows use `when`, `onError` and params expressions in a share of them (default true). */
  flowControl?: boolean;
  /** Workflows have `map` nodes in a share of them (default true). */
  maps?: boolean;
  children?: boolean;
  timers?: boolean;
  /** External workers and callbacks in a share of the worlds (WorldOptions.externals, default true). */
  externals?: boolean | "always";
  /** `vars` incr nodes in a share of the worlds (WorldOptions.vars, default off). */
  vars?: boolean | "always";
  /** `loop` nodes in a share of the worlds (WorldOptions.loops, default off). */
  loops?: boolean | "always";
  /** Concurrency limits in a share of the worlds (WorldOptions.limits, default off). */
  limits?: boolean | "always";
  onProgress?: (done: number, failures: number, elapsedMs: number) => void;
}

export interface CampaignSummary {
  runs: number;
  failures: RunResult[];
  /** Failing seeds whose every violation is an open finding, by finding. */
  known: Map<string, number[]>;
  /** Seeds that passed but left warnings (e.g. nodes left RUNNING in a finished execution), by rule. */
  warnings: Map<string, number[]>;
  statuses: Record<string, number>;
  steps: number;
  elapsedMs: number;
  text: string;
}

export async function runCampaign(options: CampaignOptions): Promise<CampaignSummary> {
  const started = Date.now();
  const failures: RunResult[] = [];
  const known = new Map<string, number[]>();
  const warnings = new Map<string, number[]>();
  const statuses: Record<string, number> = {};
  let steps = 0;
  let done = 0;
  for (let seed = options.start; seed < options.start + options.runs; seed++) {
    const result = await runWorld({
      seed,
      ...(options.redrive === undefined ? {} : { redrive: options.redrive }),
      ...(options.flowControl === undefined ? {} : { flowControl: options.flowControl }),
      ...(options.maps === undefined ? {} : { maps: options.maps }),
      ...(options.children === undefined ? {} : { children: options.children }),
      ...(options.timers === undefined ? {} : { timers: options.timers }),
      ...(options.externals === undefined ? {} : { externals: options.externals }),
      ...(options.vars === undefined ? {} : { vars: options.vars }),
      ...(options.loops === undefined ? {} : { loops: options.loops }),
      ...(options.limits === undefined ? {} : { limits: options.limits }),
    });
    done++;
    steps += result.steps;
    for (const e of result.executions) statuses[e.status] = (statuses[e.status] ?? 0) + 1;
    for (const rule of new Set(result.warnings.map((w) => w.rule)))
      warnings.set(rule, [...(warnings.get(rule) ?? []), seed]);
    options.onProgress?.(done, failures.length, Date.now() - started);
    if (result.violations.length > 0) {
      failures.push(result);
      const findings = result.violations.map((v) => openFindingOf(v)?.id);
      if (findings.every((id) => id !== undefined)) {
        for (const id of new Set(findings)) known.set(id, [...(known.get(id) ?? []), seed]);
        continue;
      }
      if (options.stopAtFirstFailure !== false) break;
    }
  }
  const elapsedMs = Date.now() - started;
  const knownSeeds = new Set([...known.values()].flat());
  const lines = [
    `${done} seed(s) from ${options.start}: ${failures.length} failing${knownSeeds.size > 0 ? ` (${knownSeeds.size} by open findings only)` : ""}, ${steps} steps, ${(elapsedMs / 1000).toFixed(1)} s`,
    `  executions ended: ${Object.entries(statuses)
      .map(([s, n]) => `${s} ${n}`)
      .join(", ")}`,
  ];
  for (const [id, seeds] of known)
    lines.push(
      `  open finding ${id} in ${seeds.length} seed(s): ${seeds.slice(0, 20).join(", ")}${seeds.length > 20 ? ", …" : ""}`,
    );
  for (const [rule, seeds] of warnings)
    lines.push(`  warning ${rule} in ${seeds.length} seed(s), e.g. ${seeds.slice(0, 5).join(", ")}`);
  if (failures.length > 1) {
    const byRule = new Map<string, number[]>();
    for (const f of failures)
      for (const rule of new Set(f.violations.map((v) => v.rule)))
        byRule.set(rule, [...(byRule.get(rule) ?? []), f.seed]);
    for (const [rule, seeds] of byRule)
      lines.push(
        `  violated ${rule} in ${seeds.length} seed(s): ${seeds.slice(0, 20).join(", ")}${seeds.length > 20 ? ", …" : ""}`,
      );
  }
  const first = failures.find((f) => !knownSeeds.has(f.seed)) ?? failures[0];
  if (first) {
    lines.push(`first failing seed ${first.seed}:`);
    lines.push(formatResult(first, { traceLines: 30 }));
    lines.push(`  replay: npm run sim -- --seed ${first.seed}`);
  }
  return { runs: done, failures, known, warnings, statuses, steps, elapsedMs, text: lines.join("\n") };
}
