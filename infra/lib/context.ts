import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import {
  PROP_SETTING_KEYS,
  type PropSettingKey,
  parseSetting,
  SETTINGS,
  type Settings,
} from "../../shared/config/settings.js";
import type { WeftApiAuthorization } from "./api.js";
import type { WeftStackProps } from "./weft-stack.js";

/** Reads one context value; the CLI hands `-c key=value` over as strings, cdk.json as JSON. */
export type ContextReader = (key: string) => unknown;

/**
 * Context keys the sample app understands (all optional). See docs/deploy.md. Those of the settings
 * the construct passes to the functions come from shared/config/settings.ts, with their validation.
 */
export const CONTEXT_KEYS: readonly string[] = [
  "weft:stackName",
  ...PROP_SETTING_KEYS.map((key) => SETTINGS[key].setBy.context),
  "weft:workerMaxConcurrency",
  "weft:logLevel",
  "weft:tracing",
  "weft:logRetentionDays",
  "weft:auth",
  "weft:jwtIssuer",
  "weft:jwtAudience",
  "weft:alarmTopicArn",
  "weft:alarmEmail",
  "weft:deletionProtection",
  "weft:removalPolicy",
  "weft:invokableFunctionArns",
  "weft:extraEventBusArns",
  "weft:secretArns",
  "weft:tasks",
];

function str(read: ContextReader, key: string): string | undefined {
  const value = read(key);
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "string") return value.trim();
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  throw new Error(`context ${key}: expected a string, got ${JSON.stringify(value)}`);
}

function int(read: ContextReader, key: string): number | undefined {
  const raw = str(read, key);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new Error(`context ${key}: expected an integer, got ${raw}`);
  return value;
}

/** A setting's context value, parsed as the functions will parse the variable it becomes. */
function setting<K extends PropSettingKey>(read: ContextReader, key: K): Settings[K] | undefined {
  const context = SETTINGS[key].setBy.context;
  const raw = str(read, context);
  return raw === undefined ? undefined : parseSetting(key, raw, `context ${context}`);
}

function bool(read: ContextReader, key: string): boolean | undefined {
  const raw = str(read, key);
  if (raw === undefined) return undefined;
  if (raw === "true") return true;
  if (raw === "false") return false;
  throw new Error(`context ${key}: expected true or false, got ${raw}`);
}

function list(read: ContextReader, key: string): string[] | undefined {
  const value = read(key);
  if (value === undefined || value === null || value === "") return undefined;
  const items = Array.isArray(value) ? value.map(String) : String(value).split(",");
  return items.map((item) => item.trim()).filter((item) => item.length > 0);
}

function oneOf<T extends string>(read: ContextReader, key: string, allowed: readonly T[]): T | undefined {
  const raw = str(read, key);
  if (raw === undefined) return undefined;
  const found = allowed.find((option) => option.toLowerCase() === raw.toLowerCase());
  if (!found) throw new Error(`context ${key}: expected one of ${allowed.join(", ")}, got ${raw}`);
  return found;
}

/** Turns the `weft:*` context values into the sample stack's props. Throws on a malformed value. */
export function weftStackPropsFromContext(read: ContextReader): WeftStackProps & { stackName: string } {
  const leaseSeconds = setting(read, "leaseSeconds");
  const workerTimeoutSeconds = setting(read, "workerTimeoutSeconds");
  const seconds = (key: "sweepFirstCheckSeconds" | "sweepIdleSeconds" | "sweepGraceSeconds") => {
    const value = setting(read, key);
    return value === undefined ? undefined : Duration.seconds(value);
  };
  const sweep = {
    firstCheck: seconds("sweepFirstCheckSeconds"),
    idle: seconds("sweepIdleSeconds"),
    grace: seconds("sweepGraceSeconds"),
  };
  const logRetentionDays = int(read, "weft:logRetentionDays");
  if (logRetentionDays !== undefined && !Object.values(RetentionDays).includes(logRetentionDays)) {
    throw new Error(`context weft:logRetentionDays: ${logRetentionDays} is not a CloudWatch Logs retention`);
  }
  const auth = oneOf(read, "weft:auth", ["iam", "jwt"] as const) ?? "iam";
  let authorization: WeftApiAuthorization = { kind: "iam" };
  if (auth === "jwt") {
    const issuer = str(read, "weft:jwtIssuer");
    const audience = list(read, "weft:jwtAudience") ?? [];
    if (!issuer || audience.length === 0) {
      throw new Error("context weft:auth=jwt needs weft:jwtIssuer and weft:jwtAudience");
    }
    authorization = { kind: "jwt", issuer, audience };
  }
  const removal = oneOf(read, "weft:removalPolicy", ["retain", "destroy"] as const);
  const defaultMaxAttempts = setting(read, "defaultMaxAttempts");
  const retentionDays = setting(read, "retentionDays");
  const workerMaxConcurrency = int(read, "weft:workerMaxConcurrency");
  const logLevel = oneOf(read, "weft:logLevel", ["DEBUG", "INFO", "WARN", "ERROR"] as const);
  const deletionProtection = bool(read, "weft:deletionProtection");
  const tracing = bool(read, "weft:tracing");
  const invokableFunctionArns = list(read, "weft:invokableFunctionArns");
  const extraEventBusArns = list(read, "weft:extraEventBusArns");
  const secretArns = list(read, "weft:secretArns");
  // The http task's allow-list: a list like the ARNs, checked as the functions will parse it.
  const httpAllowContext = SETTINGS.httpAllow.setBy.context;
  const httpAllow = list(read, httpAllowContext);
  if (httpAllow) parseSetting("httpAllow", httpAllow.join(","), `context ${httpAllowContext}`);
  const alarmTopicArn = str(read, "weft:alarmTopicArn");
  const alarmEmail = str(read, "weft:alarmEmail");
  // The custom task types' folder, bundled into the functions (relative to where cdk runs).
  const tasks = str(read, "weft:tasks");

  return {
    stackName: str(read, "weft:stackName") ?? "Weft",
    description: "weft: serverless workflow orchestrator (DynamoDB, SQS, EventBridge, Lambda, API Gateway)",
    ...(alarmTopicArn ? { alarmTopicArn } : {}),
    ...(alarmEmail ? { alarmEmail } : {}),
    weft: {
      authorization,
      ...(leaseSeconds !== undefined ? { leaseDuration: Duration.seconds(leaseSeconds) } : {}),
      ...(workerTimeoutSeconds !== undefined
        ? { workerTimeout: Duration.seconds(workerTimeoutSeconds) }
        : {}),
      ...(defaultMaxAttempts !== undefined ? { defaultMaxAttempts } : {}),
      ...(Object.values(sweep).some((duration) => duration !== undefined) ? { sweep } : {}),
      ...(retentionDays !== undefined ? { retentionDays } : {}),
      ...(workerMaxConcurrency !== undefined ? { workerMaxConcurrency } : {}),
      ...(logLevel ? { logLevel } : {}),
      ...(tracing !== undefined ? { tracing } : {}),
      ...(logRetentionDays !== undefined ? { logRetention: logRetentionDays as RetentionDays } : {}),
      ...(deletionProtection !== undefined ? { tableDeletionProtection: deletionProtection } : {}),
      ...(removal
        ? { removalPolicy: removal === "destroy" ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN }
        : {}),
      ...(invokableFunctionArns ? { invokableFunctionArns } : {}),
      ...(extraEventBusArns ? { extraEventBusArns } : {}),
      ...(secretArns ? { secretArns } : {}),
      ...(httpAllow ? { httpAllow } : {}),
      ...(tasks ? { tasks } : {}),
    },
  };
}
