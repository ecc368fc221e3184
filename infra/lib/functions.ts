import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { AssetHashType, DockerImage, Duration, Lazy, type RemovalPolicy } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { PLATFORM_VARIABLES } from "../../shared/config/settings.js";
import { DEFAULT_WORKER_TIMEOUT_SECONDS } from "../../shared/engine/worker-time.js";
import { FUNCTION_ENTRY_FILE, functionBuildOptions } from "./bundle-options.js";

/** The four Lambda functions weft deploys. */
export const WEFT_FUNCTION_KINDS = ["api", "worker", "sweeper", "dlq"] as const;
export type WeftFunctionKind = (typeof WEFT_FUNCTION_KINDS)[number];

/** Repository root (this file lives in `infra/lib/`); in the built package, its `dist/` folder. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

export interface WeftFunctionProps {
  readonly kind: WeftFunctionKind;
  readonly description: string;
  readonly memorySize: number;
  readonly timeout: Duration;
  readonly environment: Record<string, string>;
  readonly logLevel: string;
  readonly logRetention: logs.RetentionDays;
  readonly logRemovalPolicy: RemovalPolicy;
  /** X-Ray: Lambda's active tracing, and the handler's Tracer (functions/common/tracing.ts). */
  readonly tracing: boolean;
  /** What to bundle when no `code` is given: the generated entry (function-entry.ts), and the project it is bundled in. */
  readonly bundle?: { readonly entry: string; readonly projectRoot: string; readonly lockFile: string };
  /**
   * Pre-built code for the function (its module must export `handler` from `index.mjs`). When
   * set, no bundling happens; meant for tests and for users who build the functions themselves.
   */
  readonly code?: lambda.Code;
}

/**
 * One weft Lambda function: nodejs22.x on arm64, bundled locally by esbuild to split ESM with
 * source maps (bundledCode), X-Ray tracing when asked, its own log group with retention, and its own role that starts with
 * nothing but the right to write to that log group (no AWS managed policy). Everything else is
 * granted by the orchestrator.
 */
export class WeftFunction extends Construct {
  readonly function: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: WeftFunctionProps) {
    super(scope, id);

    this.logGroup = new logs.LogGroup(this, "Logs", {
      retention: props.logRetention,
      removalPolicy: props.logRemovalPolicy,
    });

    this.role = new iam.Role(this, "Role", {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `weft-${props.kind} execution role`,
    });
    this.logGroup.grantWrite(this.role);

    const environment = {
      ...props.environment,
      [PLATFORM_VARIABLES.serviceName.env]: `weft-${props.kind}`,
      [PLATFORM_VARIABLES.logLevel.env]: props.logLevel,
      [PLATFORM_VARIABLES.tracing.env]: String(props.tracing),
      [PLATFORM_VARIABLES.nodeOptions.env]: "--enable-source-maps",
    };

    const common = {
      description: props.description,
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      tracing: props.tracing ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
      logGroup: this.logGroup,
      role: this.role,
      environment,
    } satisfies Partial<lambda.FunctionProps>;

    if (props.code) {
      this.function = new lambda.Function(this, "Function", {
        ...common,
        code: props.code,
        handler: "index.handler",
      });
    } else {
      if (props.bundle === undefined || !existsSync(props.bundle.entry)) {
        throw new Error(`weft: the ${props.kind} function has neither code nor an entry file to bundle`);
      }
      this.function = new lambda.Function(this, "Function", {
        ...common,
        code: bundledCode(props.kind, props.bundle),
        handler: "index.handler",
      });
    }

    // Lambda makes the function depend on its whole role construct, which renders as DependsOn the
    // role and its policy. The role is already a dependency through Fn::GetAtt (cfn-lint W3005), so
    // keep only the policy: the function must not be created before its permissions exist.
    const cfnFunction = this.function.node.defaultChild as lambda.CfnFunction;
    cfnFunction.addOverride(
      "DependsOn",
      Lazy.list(
        {
          produce: () => {
            const policy = this.role.node.tryFindChild("DefaultPolicy")?.node.defaultChild as
              | iam.CfnPolicy
              | undefined;
            return policy ? [policy.logicalId] : [];
          },
        },
        { omitEmpty: true },
      ),
    );
  }
}

export const DEFAULT_FUNCTION_SETTINGS: Record<
  WeftFunctionKind,
  { memorySize: number; timeout: Duration; description: string }
> = {
  api: {
    memorySize: 512,
    // API Gateway gives up on an integration after ~30 s; the api only records and dispatches.
    timeout: Duration.seconds(29),
    description: "weft HTTP API: workflows, executions, history, DLQ",
  },
  worker: {
    memorySize: 1024,
    // The engine's own default (worker-time.ts): registration and deadlines assume this timeout.
    timeout: Duration.seconds(DEFAULT_WORKER_TIMEOUT_SECONDS),
    description: "weft worker: runs node tasks from the task queue",
  },
  sweeper: {
    memorySize: 512,
    timeout: Duration.seconds(55),
    description: "weft sweeper: recovers expired leases, dispatches due retries and waits",
  },
  dlq: {
    memorySize: 512,
    timeout: Duration.seconds(60),
    description: "weft DLQ consumer: records dead-lettered work",
  },
};

/**
 * The function's asset: its entry bundled at synth time by the project's esbuild with the options of
 * bundle-options.ts (the cold-start bench builds with the same), split into `index.mjs` and the
 * chunks it loads on first use. NodejsFunction cannot split (it writes one file), hence this local
 * bundling; the Docker image is never pulled, as the local bundler either succeeds or throws.
 * Hashed by output: the asset changes exactly when the bundle does.
 */
function bundledCode(kind: WeftFunctionKind, bundle: NonNullable<WeftFunctionProps["bundle"]>): lambda.Code {
  return lambda.Code.fromAsset(path.dirname(bundle.entry), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      image: DockerImage.fromRegistry("weft-bundles-locally-with-esbuild"),
      // CDK keys its cache of bundled assets by source folder and bundling options (not the local
      // bundler, a function), the same for the four entries of one folder: the entry's name, here
      // and nowhere else (Docker never runs), tells them apart.
      environment: { WEFT_FUNCTION_ENTRY: path.basename(bundle.entry) },
      local: {
        tryBundle(outputDir) {
          const esbuild = createRequire(path.join(bundle.projectRoot, "package.json"))(
            "esbuild",
          ) as typeof import("esbuild");
          const result = esbuild.buildSync(
            functionBuildOptions({
              entry: bundle.entry,
              outdir: outputDir,
              absWorkingDir: bundle.projectRoot,
            }),
          );
          if (result.errors.length > 0 || !existsSync(path.join(outputDir, FUNCTION_ENTRY_FILE)))
            throw new Error(
              `weft: esbuild could not bundle the ${kind} function: ${result.errors.map((e) => e.text).join("; ")}`,
            );
          return true;
        },
      },
    },
  });
}
