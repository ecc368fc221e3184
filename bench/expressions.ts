/**
 * What one expression evaluation costs: in the caller's thread (the domain's evaluator, which the
 * engine used before expressions were isolated) against the isolated evaluator's threads (what the
 * deployed functions and the local runtime use now), over a small and a large scope. Engine CPU per
 * node for workloads without expressions is measured apart (engine-cpu.ts): they never reach an
 * evaluator.
 */
import { IsolatedExpressions } from "../shared/adapters/expressions/isolated.js";
import type { ExpressionScope } from "../shared/domain/expressions.js";
import { IN_THREAD_EXPRESSIONS } from "../shared/engine/expressions.js";
import type { ExpressionEvaluator } from "../shared/ports.js";

export interface ExpressionCostResult {
  evaluator: "in-thread" | "isolated";
  scope: string;
  evaluations: number;
  /** Wall time per evaluation, one after another (the latency a node sees). */
  medianUs: number;
  p90Us: number;
  /** The calling thread's CPU per evaluation (what the engine's event loop pays). */
  callerCpuUs: number;
}

const PARAMS = {
  url: "{% 'https://api.example.test/orders/' & input.order.id %}",
  total: "{% $sum(input.order.lines.(qty * price)) %}",
  tag: "{% $uppercase(input.order.region) %}",
};

function scopeOf(lines: number): ExpressionScope {
  return {
    input: {
      order: {
        id: "o-1",
        region: "eu",
        lines: Array.from({ length: lines }, (_, i) => ({
          sku: `sku-${i}`,
          qty: i % 5,
          price: 9.5,
          note: "x".repeat(40),
        })),
      },
    },
    deps: {},
    execution: { id: "e-1", workflow: "bench", version: 1 },
  };
}

const SCOPES = [
  { name: "1 KiB", scope: scopeOf(10) },
  { name: "100 KiB", scope: scopeOf(1000) },
];

async function measure(
  evaluator: ExpressionEvaluator,
  name: ExpressionCostResult["evaluator"],
  scope: { name: string; scope: ExpressionScope },
  evaluations: number,
): Promise<ExpressionCostResult> {
  const options = { now: () => 0 };
  for (let i = 0; i < 50; i++) await evaluator.resolve(PARAMS, scope.scope, options); // warm-up
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < evaluations; i++) {
    const t0 = performance.now();
    await evaluator.resolve(PARAMS, scope.scope, options);
    times.push((performance.now() - t0) * 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  return {
    evaluator: name,
    scope: scope.name,
    evaluations,
    medianUs: times[Math.floor(times.length / 2)] ?? 0,
    p90Us: times[Math.floor(times.length * 0.9)] ?? 0,
    // process.cpuUsage counts every thread of the process: the isolated rows include the thread's
    // CPU too, so this is an upper bound on the caller's share.
    callerCpuUs: (cpu.user + cpu.system) / evaluations,
  };
}

export async function measureExpressionCost(
  options: { quick?: boolean } = {},
): Promise<ExpressionCostResult[]> {
  const evaluations = options.quick ? 200 : 2000;
  const isolated = new IsolatedExpressions();
  const results: ExpressionCostResult[] = [];
  try {
    for (const scope of SCOPES) {
      results.push(await measure(IN_THREAD_EXPRESSIONS, "in-thread", scope, evaluations));
      results.push(await measure(isolated, "isolated", scope, evaluations));
    }
  } finally {
    await isolated.close();
  }
  return results;
}

export function renderExpressionCost(results: readonly ExpressionCostResult[]): string[] {
  return [
    "| evaluator | scope | evaluations | median µs | p90 µs | process CPU µs per evaluation |",
    "|---|---|---|---|---|---|",
    ...results.map(
      (r) =>
        `| ${r.evaluator} | ${r.scope} | ${r.evaluations} | ${r.medianUs.toFixed(0)} | ${r.p90Us.toFixed(0)} | ${r.callerCpuUs.toFixed(0)} |`,
    ),
  ];
}
