/**
 * `npm run rehearse`: proves the deployed stack behaves like the tests. Synthesizes the sample app
 * (bundling the handlers), stands its resources up on an emulator, runs the bundled handlers from
 * the cloud assembly in their own processes with their roles enforced by per-function IAM proxies,
 * drives them as AWS would (API Gateway, SQS event sources, the schedule) through the scenarios, and
 * reports every denied call and every unused grant. Exits 1 when any check fails.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { synthesize } from "./cfn/synth.js";
import { ApiCaller } from "./client.js";
import { deploy, shortName } from "./deployment.js";
import { GrantLedger } from "./iam/ledger.js";
import {
  COMPRESSED_CONTEXT,
  FAILED_VISIBILITY_SECONDS,
  MAX_CONCURRENCY,
  parseOptions,
  SWEEP_INTERVAL_MS,
  USAGE,
} from "./options.js";
import {
  type CheckResult,
  checkLine,
  deploymentSummary,
  grantsReport,
  say,
  seconds,
  symbolic,
} from "./report.js";
import type { RehearsalContext, Scenario } from "./scenarios/context.js";
import { SCENARIOS } from "./scenarios/index.js";
import { provision } from "./target/provision.js";
import { startTarget } from "./target/target.js";

async function runScenario(scenario: Scenario, ctx: RehearsalContext): Promise<CheckResult> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`did not finish within ${seconds(scenario.timeoutMs)}`)),
      scenario.timeoutMs,
    );
  });
  try {
    const note = await Promise.race([scenario.run(ctx), timeout]);
    return { name: scenario.name, ok: true, ms: Date.now() - started, detail: note ?? "" };
  } catch (error) {
    return {
      name: scenario.name,
      ok: false,
      ms: Date.now() - started,
      detail: error instanceof Error ? error.message : String(error),
    };
  } finally {
    clearTimeout(timer);
  }
}

async function main(): Promise<number> {
  const started = Date.now();
  const options = parseOptions(process.argv.slice(2), process.env);
  if (options === "help") {
    say(USAGE);
    return 0;
  }
  const tmpDir = mkdtempSync(path.join(tmpdir(), "weft-rehearsal-"));
  const cleanups: Array<() => Promise<unknown>> = [];
  const results: CheckResult[] = [];
  const problems: string[] = [];
  let crashed = false;
  const cleanUp = async () => {
    for (const step of cleanups.splice(0).reverse()) {
      await step().catch((error: unknown) =>
        say(`  (cleanup: ${error instanceof Error ? error.message : String(error)})`),
      );
    }
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      say(`\n${signal}: stopping`);
      void cleanUp().finally(() => process.exit(130));
    });
  }

  try {
    say("== synthesize (in-process CDK, handlers bundled by the local esbuild, cdk-nag as a plugin)");
    const t0 = Date.now();
    const synth = synthesize(path.join(tmpDir, "cdk.out"), { ...COMPRESSED_CONTEXT });
    const types = Object.values(synth.template.Resources).map((r) => r.Type);
    const functions = types.filter((type) => type === "AWS::Lambda::Function").length;
    say(
      `stack ${synth.stackName}: ${types.length} resources, ${functions} functions bundled (${seconds(Date.now() - t0)})`,
    );
    say(
      `compressed context: ${Object.entries(COMPRESSED_CONTEXT)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ")}`,
    );

    say(
      options.endpoint
        ? `== target: the emulator at ${options.endpoint}`
        : "== target: moto on a free loopback port",
    );
    const target = await startTarget(options.endpoint);
    cleanups.push(() => target.stop());
    const provisioned = await provision(synth.template, synth.stackName, target.admin, target.region);
    if (target.kind === "endpoint") {
      cleanups.push(async () => {
        for (const problem of await provisioned.teardown()) say(`  (teardown: ${problem})`);
      });
    }
    for (const created of provisioned.created)
      say(`stood up ${created.type} ${created.logicalId} → ${created.physicalId}`);
    for (const skipped of provisioned.skippedProperties)
      say(`  (not applied on the emulator: ${skipped.logicalId}.${skipped.property})`);

    say(
      "== deploy: bundled handlers in their own processes, one IAM proxy per role, API Gateway, event sources, schedule",
    );
    const ledger = new GrantLedger();
    const deployment = await deploy({
      template: synth.template,
      scope: provisioned.scope,
      account: provisioned.account,
      assetDirs: synth.assetDirs,
      target,
      ledger,
      tmpDir,
      maxConcurrency: MAX_CONCURRENCY,
      sweepIntervalMs: SWEEP_INTERVAL_MS,
      failedVisibilitySeconds: FAILED_VISIBILITY_SECONDS,
      onDenied: (line) => say(`  DENIED ${symbolic(provisioned.scope)(line)}`),
      onProblem: (line) => problems.push(line),
    });
    cleanups.push(() => deployment.stop());
    for (const [logicalId, pool] of deployment.pools) {
      say(
        `function ${shortName(logicalId)}: ${pool.spec.runtime}, timeout ${pool.spec.timeoutSeconds} s, ${pool.spec.memorySize} MB, code ${path.relative(tmpDir, pool.spec.codeDir)}/index.mjs`,
      );
    }
    const here = process.versions.node.split(".")[0];
    const runtimes = new Set([...deployment.pools.values()].map((pool) => pool.spec.runtime));
    for (const runtime of runtimes) {
      if (runtime.startsWith("nodejs") && !runtime.startsWith(`nodejs${here}.`)) {
        say(
          `note: the template's runtime is ${runtime}; the handlers run on this machine's Node.js ${process.versions.node}`,
        );
      }
    }
    say(`API ${deployment.api.url}`);

    const workerEnv = deployment.roles.worker.spec.env;
    const ctx: RehearsalContext = {
      api: new ApiCaller(deployment.api.url, target.region),
      admin: target.admin,
      taskQueueUrl: deployment.taskQueueUrl,
      deadLetterQueueUrl: deployment.deadLetterQueueUrl,
      functions: deployment.roles,
      consumers: deployment.consumers,
      faults: deployment.faults,
      principals: {
        api: shortName(deployment.roles.api.spec.logicalId),
        worker: shortName(deployment.roles.worker.spec.logicalId),
        sweeper: shortName(deployment.roles.sweeper.spec.logicalId),
        dlq: shortName(deployment.roles.dlq.spec.logicalId),
      },
      tableName: deployment.tableName,
      callCount: (principal, action) => ledger.calls(principal, action),
      sweeps: deployment.sweeps,
      pauseSweeps: () => deployment.pauseSweeps(),
      timings: {
        leaseSeconds: Number(workerEnv.WEFT_LEASE_SECONDS ?? 60),
        workerTimeoutSeconds: deployment.roles.worker.spec.timeoutSeconds,
        sweepIntervalMs: SWEEP_INTERVAL_MS,
        failedVisibilitySeconds: FAILED_VISIBILITY_SECONDS,
      },
      unique: (name) => `rh-${name}-${started.toString(36)}`,
    };

    say("== scenarios");
    const chosen = SCENARIOS.filter(
      (s) => options.only.length === 0 || options.only.some((text) => s.name.includes(text)),
    );
    for (const scenario of chosen) {
      const result = await runScenario(scenario, ctx);
      results.push(result);
      say(checkLine(result));
    }

    say("== IAM");
    const render = symbolic(provisioned.scope);
    const denials = ledger.denials();
    results.push({
      name: "IAM: every AWS call allowed by the calling function's role",
      ok: denials.length === 0,
      ms: 0,
      detail:
        denials.length === 0
          ? ""
          : `${denials.length} denied: ${denials.map((d) => `${d.principal} ${d.action} on ${render(d.resource)}`).join("; ")}`,
    });
    say(checkLine(results.at(-1) as CheckResult));
    for (const line of grantsReport(ledger, render)) say(line);
    const unused = ledger.unused();
    if (options.only.length === 0) {
      results.push({
        name: "IAM: no grant unused (Lambda platform grants for CloudWatch Logs and X-Ray exempt)",
        ok: unused.length === 0,
        ms: 0,
        detail: unused.length === 0 ? "" : `${unused.length} unused`,
      });
      say(checkLine(results.at(-1) as CheckResult));
    } else say("(unused grants not checked: only some scenarios ran)");

    for (const line of deploymentSummary(deployment, SWEEP_INTERVAL_MS)) say(line);
  } catch (error) {
    crashed = true;
    say(
      `\nthe rehearsal could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  } finally {
    await cleanUp();
  }
  for (const problem of problems) say(`  note: ${problem}`);
  const failed = crashed || results.some((r) => !r.ok);
  const passed = results.filter((r) => r.ok).length;
  say(
    `\n== ${failed ? "FAILED" : "PASSED"}: ${passed}/${results.length} checks in ${seconds(Date.now() - started)}`,
  );
  if (failed || options.keep) say(`kept ${tmpDir} (cloud assembly, function logs)`);
  else rmSync(tmpDir, { recursive: true, force: true });
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
