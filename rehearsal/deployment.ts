/**
 * The stack "deployed" on the emulator: each function with its execution environments and its
 * IAM-enforcing proxy (a second one for its event source mapping, same role), the HTTP API, the
 * SQS event source mappings and the schedules — all read from the template — and which function
 * plays which part (the API's integration, the task queue's consumer, the DLQ's, the scheduled one).
 */
import { createWriteStream, type WriteStream } from "node:fs";
import path from "node:path";
import { SQSClient } from "@aws-sdk/client-sqs";
import { type ResolveScope, resolveString } from "./cfn/intrinsics.js";
import { type CfnTemplate, resourcesOfType, targetId } from "./cfn/template.js";
import { Faults } from "./faults.js";
import type { GrantLedger } from "./iam/ledger.js";
import { type IamProxy, startIamProxy } from "./iam/proxy.js";
import { rolePolicies } from "./iam/roles.js";
import type { InvokeOutcome } from "./lambda/container.js";
import { functionSpec, templateFunctions } from "./lambda/functions.js";
import { FunctionPool } from "./lambda/pool.js";
import type { SweepTally } from "./scenarios/context.js";
import { type HttpApi, startHttpApi } from "./sources/http-api.js";
import { apiRoutes } from "./sources/routes.js";
import { type ScheduledTarget, type Schedules, startSchedules } from "./sources/schedule.js";
import { type EventSourceMapping, type SqsSource, startSqsSource } from "./sources/sqs-source.js";
import { FAKE_CREDENTIALS, type Target } from "./target/target.js";

export interface DeploymentOptions {
  template: CfnTemplate;
  scope: ResolveScope;
  account: string;
  assetDirs: ReadonlyMap<string, string>;
  target: Target;
  ledger: GrantLedger;
  tmpDir: string;
  /** Most execution environments per function (a 2-core machine runs them all). */
  maxConcurrency: number;
  sweepIntervalMs: number;
  failedVisibilitySeconds: number;
  onDenied: (line: string) => void;
  onProblem: (line: string) => void;
}

export interface Deployment {
  api: HttpApi;
  pools: Map<string, FunctionPool>;
  roles: { api: FunctionPool; worker: FunctionPool; sweeper: FunctionPool; dlq: FunctionPool };
  /** The task queue's and the DLQ's event sources. */
  consumers: { worker: SqsSource; dlq: SqsSource };
  faults: Faults;
  tableName: string;
  taskQueueUrl: string;
  deadLetterQueueUrl: string;
  sweeps: SweepTally;
  /** Holds the scheduled sweeper runs until the returned function is called. */
  pauseSweeps(): () => void;
  sources: SqsSource[];
  /** The function's short name for reports, by logical id. */
  principals: Map<string, string>;
  stop(): Promise<void>;
}

/** `WeftWorkerFunctionEF51FF54` → `WeftWorkerFunction`. */
export function shortName(logicalId: string): string {
  return logicalId.replace(/[0-9A-F]{8}$/, "");
}

function eventSourceMappings(template: CfnTemplate, scope: ResolveScope): EventSourceMapping[] {
  return resourcesOfType(template, "AWS::Lambda::EventSourceMapping").map(([logicalId, resource]) => {
    const props = resource.Properties ?? {};
    const queueId = targetId(props.EventSourceArn);
    const queue = queueId ? scope.resources.get(queueId) : undefined;
    const functionLogicalId = targetId(props.FunctionName);
    if (!queue?.attributes.QueueUrl || !functionLogicalId) {
      throw new Error(
        `${logicalId}: only SQS event sources of the template's own queues and functions are rehearsed`,
      );
    }
    const scaling = props.ScalingConfig as { MaximumConcurrency?: number } | undefined;
    return {
      logicalId,
      functionLogicalId,
      queueArn: resolveString(props.EventSourceArn, scope, `${logicalId} EventSourceArn`),
      queueUrl: queue.attributes.QueueUrl,
      batchSize: Number(props.BatchSize ?? 10),
      maximumConcurrency: scaling?.MaximumConcurrency,
      reportBatchItemFailures: ((props.FunctionResponseTypes as string[] | undefined) ?? []).includes(
        "ReportBatchItemFailures",
      ),
      enabled: props.Enabled !== false,
    };
  });
}

/** The queues that are another queue's dead-letter target. */
function deadLetterQueueIds(template: CfnTemplate): Set<string> {
  const ids = new Set<string>();
  for (const [, queue] of resourcesOfType(template, "AWS::SQS::Queue")) {
    const redrive = queue.Properties?.RedrivePolicy as { deadLetterTargetArn?: unknown } | undefined;
    const id = targetId(redrive?.deadLetterTargetArn);
    if (id) ids.add(id);
  }
  return ids;
}

export async function deploy(options: DeploymentOptions): Promise<Deployment> {
  const { template, scope, target, ledger } = options;
  // Stopping order: the event sources and schedules are told first (without waiting for the
  // invocations they are in), then every execution environment is killed (which ends those
  // invocations), then the rest goes in reverse order of creation.
  const stoppers: Array<() => Promise<void>> = [];
  const drains: Array<() => Promise<void>> = [];
  const poolStops: Array<() => Promise<void>> = [];
  const stop = async () => {
    const report = (error: unknown) => options.onProblem(`stopping: ${String(error)}`);
    const draining = drains.map((drain) => drain().catch(report));
    await Promise.all(poolStops.map((step) => step().catch(report)));
    await Promise.all(draining);
    for (const step of stoppers.reverse()) await step().catch(report);
  };
  try {
    const pools = new Map<string, FunctionPool>();
    const faults = new Faults();
    const principals = new Map<string, string>();
    const proxies = new Map<string, { handler: IamProxy; policies: ReturnType<typeof rolePolicies> }>();
    const logs: WriteStream[] = [];
    stoppers.push(async () => {
      await Promise.all(logs.map((log) => new Promise<void>((resolve) => log.end(() => resolve()))));
    });
    const mappings = eventSourceMappings(template, scope);
    const scheduleTargets = resourcesOfType(template, "AWS::Events::Rule").filter(
      ([, rule]) =>
        typeof rule.Properties?.ScheduleExpression === "string" && rule.Properties.State !== "DISABLED",
    );

    for (const fn of templateFunctions(template, scope, options.assetDirs)) {
      const principal = shortName(fn.logicalId);
      principals.set(fn.logicalId, principal);
      const policies = rolePolicies(template, fn.roleLogicalId, scope);
      ledger.register(principal, policies.identity);
      const arnScope = { account: options.account, defaultRegion: target.region };
      const handler = await startIamProxy({
        principal,
        caller: "handler",
        policies,
        ledger,
        upstream: target.endpoint,
        scope: arnScope,
        onDenied: options.onDenied,
        faults,
        crash: (accessKeyId) => {
          if (!pools.get(fn.logicalId)?.kill(accessKeyId))
            options.onProblem(`${principal}: no environment to crash`);
        },
      });
      stoppers.push(() => handler.stop());
      proxies.set(fn.logicalId, { handler, policies });
      const log = createWriteStream(path.join(options.tmpDir, `${principal}.log`), { flags: "a" });
      logs.push(log);
      const mapping = mappings.find((m) => m.functionLogicalId === fn.logicalId);
      const concurrency = Math.min(
        options.maxConcurrency,
        mapping?.maximumConcurrency ?? options.maxConcurrency,
      );
      const pool = new FunctionPool(
        functionSpec(fn, { endpoint: handler.url, region: target.region, tmpDir: options.tmpDir }),
        {
          maxConcurrency: concurrency,
          log,
        },
      );
      poolStops.push(() => pool.stop());
      pools.set(fn.logicalId, pool);
    }

    const routes = apiRoutes(template);
    const apiResource = resourcesOfType(template, "AWS::ApiGatewayV2::Api")[0];
    const apiId = apiResource ? (scope.resources.get(apiResource[0])?.ref ?? "api") : "api";
    const api = await startHttpApi({
      routes,
      functions: pools,
      apiId,
      region: target.region,
      accountId: options.account,
      caller: { ...FAKE_CREDENTIALS, userArn: `arn:aws:iam::${options.account}:user/rehearsal` },
    });
    stoppers.push(() => api.stop());

    const sources: SqsSource[] = [];
    for (const mapping of mappings) {
      const pool = pools.get(mapping.functionLogicalId);
      const owner = proxies.get(mapping.functionLogicalId);
      if (!pool || !owner) throw new Error(`${mapping.logicalId}: its function is not in the template`);
      const principal = principals.get(mapping.functionLogicalId) ?? mapping.functionLogicalId;
      const esmProxy = await startIamProxy({
        principal,
        caller: "event source mapping",
        policies: owner.policies,
        ledger,
        upstream: target.endpoint,
        scope: { account: options.account, defaultRegion: target.region },
        onDenied: options.onDenied,
      });
      stoppers.push(() => esmProxy.stop());
      const roleClient = new SQSClient({
        endpoint: esmProxy.url,
        region: target.region,
        credentials: FAKE_CREDENTIALS,
      });
      stoppers.push(async () => roleClient.destroy());
      const source = await startSqsSource({
        mapping,
        pool,
        roleClient,
        adminClient: target.admin.sqs,
        pollers: Math.min(options.maxConcurrency, mapping.maximumConcurrency ?? 5),
        failedVisibilitySeconds: options.failedVisibilitySeconds,
        onError: options.onProblem,
      });
      drains.push(() => source.stop());
      sources.push(source);
    }

    const sweeps: SweepTally = { runs: 0, recoveredLeases: 0, errors: 0 };
    const scheduled: ScheduledTarget[] = scheduleTargets.flatMap(([ruleId, rule]) =>
      ((rule.Properties?.Targets as Array<{ Arn: unknown; Input?: string }> | undefined) ?? []).flatMap(
        (t) => {
          const pool = pools.get(targetId(t.Arn) ?? "");
          if (!pool) return [];
          return [
            {
              ruleLogicalId: ruleId,
              ruleArn: scope.resources.get(ruleId)?.attributes.Arn ?? ruleId,
              expression: String(rule.Properties?.ScheduleExpression),
              pool,
              ...(t.Input === undefined ? {} : { input: t.Input }),
            },
          ];
        },
      ),
    );
    const schedules: Schedules = startSchedules(scheduled, {
      intervalMs: options.sweepIntervalMs,
      account: options.account,
      region: target.region,
      onResult: (_target, outcome: InvokeOutcome) => {
        sweeps.runs++;
        if (!outcome.ok) {
          sweeps.errors++;
          options.onProblem(`scheduled run failed: ${outcome.errorType}: ${outcome.errorMessage}`);
          return;
        }
        const report = outcome.result as { recoveredLeases?: number } | null;
        sweeps.recoveredLeases += report?.recoveredLeases ?? 0;
      },
    });
    drains.push(() => schedules.stop());

    // Which function is which, from the template's wiring alone.
    const dlqIds = deadLetterQueueIds(template);
    const queueIdOf = (mapping: EventSourceMapping) =>
      [...scope.resources.entries()].find(([, r]) => r.attributes.QueueUrl === mapping.queueUrl)?.[0] ?? "";
    const workerMapping = mappings.find((m) => !dlqIds.has(queueIdOf(m)));
    const dlqMapping = mappings.find((m) => dlqIds.has(queueIdOf(m)));
    const apiFunction = routes[0]?.functionLogicalId;
    const sweeperPool = scheduled[0]?.pool;
    const pick = (id: string | undefined, part: string) => {
      const pool = id === undefined ? undefined : pools.get(id);
      if (!pool) throw new Error(`the template has no ${part}`);
      return pool;
    };
    if (!sweeperPool) throw new Error("the template schedules no function");
    if (!workerMapping || !dlqMapping) throw new Error("the template has no task queue and DLQ consumers");
    const sourceOf = (mapping: EventSourceMapping) =>
      sources.find((source) => source.mapping === mapping) as SqsSource;
    const [tableId] = resourcesOfType(template, "AWS::DynamoDB::Table")[0] ?? [];
    const tableName = tableId ? scope.resources.get(tableId)?.ref : undefined;
    if (!tableName) throw new Error("the template has no table");
    return {
      api,
      pools,
      roles: {
        api: pick(apiFunction, "API integration"),
        worker: pick(workerMapping.functionLogicalId, "task queue consumer"),
        sweeper: sweeperPool,
        dlq: pick(dlqMapping.functionLogicalId, "DLQ consumer"),
      },
      consumers: { worker: sourceOf(workerMapping), dlq: sourceOf(dlqMapping) },
      faults,
      tableName,
      taskQueueUrl: workerMapping.queueUrl,
      deadLetterQueueUrl: dlqMapping.queueUrl,
      sweeps,
      pauseSweeps: () => schedules.pause(),
      sources,
      principals,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
