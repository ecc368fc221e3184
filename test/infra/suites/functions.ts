import { Duration } from "aws-cdk-lib";
import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { MAX_POLL_SECONDS } from "../../../shared/engine/external.js";
import { baseSynth, KINDS, resource, resourcesOfType, synthWeft } from "../fixture.js";

export function functionsSuite(): void {
  const base = baseSynth();
  const tuned = synthWeft(
    {
      weft: {
        workerMaxConcurrency: 200,
        workerBatchSize: 5,
        leaseDuration: Duration.seconds(90),
        defaultMaxAttempts: 7,
        retentionDays: 90,
        workerTimeout: Duration.minutes(10),
        sweep: { idle: Duration.minutes(10), grace: Duration.seconds(90) },
        logLevel: "DEBUG",
        tracing: true,
      },
    },
    "WeftTuned",
  );

  const props = (kind: (typeof KINDS)[number], synth = base) =>
    resource(synth.json, synth.functionId(kind)).Properties as Record<string, unknown>;

  describe("Lambda functions", () => {
    it("deploys exactly the four weft functions", () => {
      expect(resourcesOfType(base.json, "AWS::Lambda::Function")).toHaveLength(4);
    });

    it.each(KINDS)("%s runs nodejs22.x on arm64, with X-Ray only when `tracing` is on", (kind) => {
      const p = props(kind);
      expect(p.Runtime).toBe("nodejs22.x");
      expect(p.Architectures).toEqual(["arm64"]);
      expect(p.Handler).toBe("index.handler");
      const environment = (p: Record<string, unknown>) =>
        (p.Environment as { Variables: Record<string, unknown> }).Variables;
      // Off by default: no active tracing, and the handler loads no Tracer (functions/common/tracing.ts).
      expect((p.TracingConfig as { Mode?: string } | undefined)?.Mode ?? "PassThrough").toBe("PassThrough");
      expect(environment(p).POWERTOOLS_TRACE_ENABLED).toBe("false");
      const traced = props(kind, tuned);
      expect(traced.TracingConfig).toEqual({ Mode: "Active" });
      expect(environment(traced).POWERTOOLS_TRACE_ENABLED).toBe("true");
    });

    it.each(KINDS)("%s logs to its own log group with a retention", (kind) => {
      const logGroupId = base.logicalId(base.stack.weft.functions[kind].logGroup);
      expect(props(kind).LoggingConfig).toEqual({ LogGroup: { Ref: logGroupId } });
      expect(resource(base.json, logGroupId).Properties?.RetentionInDays).toBe(30);
    });

    it.each(KINDS)("%s gets the weft and Powertools environment", (kind) => {
      const env = (props(kind).Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env).toEqual({
        WEFT_TABLE_NAME: { Ref: base.logicalId(base.stack.weft.table) },
        WEFT_QUEUE_URL: { Ref: base.logicalId(base.stack.weft.taskQueue) },
        WEFT_EVENT_BUS_NAME: { Ref: base.logicalId(base.stack.weft.eventBus) },
        WEFT_LEASE_SECONDS: "60",
        WEFT_DEFAULT_MAX_ATTEMPTS: "3",
        WEFT_RETENTION_DAYS: "30",
        WEFT_WORKER_TIMEOUT_SECONDS: "300",
        WEFT_PAYLOAD_BUCKET: { Ref: base.logicalId(base.stack.weft.payloadBucket) },
        POWERTOOLS_SERVICE_NAME: `weft-${kind}`,
        POWERTOOLS_LOG_LEVEL: "INFO",
        POWERTOOLS_TRACE_ENABLED: "false",
        NODE_OPTIONS: "--enable-source-maps",
      });
    });

    it("passes tunables through the environment", () => {
      const env = (props("worker", tuned).Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env).toMatchObject({
        WEFT_LEASE_SECONDS: "90",
        WEFT_DEFAULT_MAX_ATTEMPTS: "7",
        WEFT_RETENTION_DAYS: "90",
        WEFT_WORKER_TIMEOUT_SECONDS: "600",
        WEFT_SWEEP_IDLE_SECONDS: "600",
        WEFT_SWEEP_GRACE_SECONDS: "90",
        POWERTOOLS_LOG_LEVEL: "DEBUG",
      });
      expect(env.WEFT_SWEEP_FIRST_CHECK_SECONDS).toBeUndefined();
    });

    it("sizes memory and timeouts per role (the api stays under API Gateway's 30 s)", () => {
      expect(props("api")).toMatchObject({ MemorySize: 512, Timeout: 29 });
      expect(props("worker")).toMatchObject({ MemorySize: 1024, Timeout: 300 });
      expect(props("sweeper")).toMatchObject({ MemorySize: 512, Timeout: 55 });
      expect(props("dlq")).toMatchObject({ MemorySize: 512, Timeout: 60 });
      // The longest worker poll (POST /workers/{id}/poll) waits this long, then answers, in time.
      expect(props("api").Timeout as number).toBeGreaterThan(MAX_POLL_SECONDS + 5);
    });

    it("depends on its policy but not redundantly on its role", () => {
      for (const kind of KINDS) {
        const fn = resource(base.json, base.functionId(kind));
        const roleId = base.logicalId(base.stack.weft.functions[kind].role);
        expect(fn.DependsOn).toHaveLength(1);
        expect(fn.DependsOn?.[0]).toMatch(/DefaultPolicy/);
        expect(fn.DependsOn).not.toContain(roleId);
      }
    });
  });

  describe("SQS event sources", () => {
    const mappings = resourcesOfType(base.json, "AWS::Lambda::EventSourceMapping");
    const mappingFor = (synth: typeof base, kind: "worker" | "dlq") =>
      resourcesOfType(synth.json, "AWS::Lambda::EventSourceMapping").find(
        ([, m]) =>
          JSON.stringify(m.Properties?.FunctionName) === JSON.stringify({ Ref: synth.functionId(kind) }),
      )?.[1].Properties;

    it("has exactly two: the worker on the task queue and the consumer on the DLQ", () => {
      expect(mappings).toHaveLength(2);
      expect(mappingFor(base, "worker")?.EventSourceArn).toEqual({
        "Fn::GetAtt": [base.logicalId(base.stack.weft.taskQueue), "Arn"],
      });
      expect(mappingFor(base, "dlq")?.EventSourceArn).toEqual({
        "Fn::GetAtt": [base.logicalId(base.stack.weft.deadLetterQueue), "Arn"],
      });
    });

    it("reports partial batch failures and caps the worker's concurrency", () => {
      expect(mappingFor(base, "worker")).toMatchObject({
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        ScalingConfig: { MaximumConcurrency: 50 },
        BatchSize: 10,
      });
      expect(mappingFor(tuned, "worker")).toMatchObject({
        ScalingConfig: { MaximumConcurrency: 200 },
        BatchSize: 5,
      });
      expect(mappingFor(base, "dlq")).toMatchObject({
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        ScalingConfig: { MaximumConcurrency: 2 },
      });
    });
  });

  describe("sweeper schedule", () => {
    it("runs the sweeper every minute", () => {
      const sweeperId = base.functionId("sweeper");
      base.template.hasResourceProperties("AWS::Events::Rule", {
        ScheduleExpression: "rate(1 minute)",
        State: "ENABLED",
        Targets: [
          Match.objectLike({ Arn: { "Fn::GetAtt": [sweeperId, "Arn"] }, RetryPolicy: Match.anyValue() }),
        ],
      });
      base.template.hasResourceProperties("AWS::Lambda::Permission", {
        Action: "lambda:InvokeFunction",
        Principal: "events.amazonaws.com",
        FunctionName: { "Fn::GetAtt": [sweeperId, "Arn"] },
        SourceArn: { "Fn::GetAtt": [base.logicalId(base.stack.weft.sweeperSchedule), "Arn"] },
      });
    });

    it("is the only scheduled rule", () => {
      const scheduled = resourcesOfType(base.json, "AWS::Events::Rule").filter(
        ([, r]) => r.Properties?.ScheduleExpression,
      );
      expect(scheduled).toHaveLength(1);
    });
  });
}
