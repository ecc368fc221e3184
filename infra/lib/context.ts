import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { WeftApiAuthorization } from "./api.js";
import type { WeftStackProps } from "./weft-stack.js";

/** Reads one context value; the CLI hands `-c key=value` over as strings, cdk.json as JSON. */
export type ContextReader = (key: string) => unknown;

/** Context keys the sample app understands (all optional). See docs/deploy.md. */
export const CONTEXT_KEYS = [
  "weft:stackName",
  "weft:leaseSeconds",
  "weft:defaultMaxAttempts",
  "weft:retentionDays",
  "weft:workerMaxConcurrency",
  "weft:workerTimeoutSeconds",
  "weft:logLevel",
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
] as const;

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
  const leaseSeconds = int(read, "weft:leaseSeconds");
  const workerTimeoutSeconds = int(read, "weft:workerTimeoutSeconds");
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
  const defaultMaxAttempts = int(read, "weft:defaultMaxAttempts");
  const retentionDays = int(read, "weft:retentionDays");
  const workerMaxConcurrency = int(read, "weft:workerMaxConcurrency");
  const logLevel = oneOf(read, "weft:logLevel", ["DEBUG", "INFO", "WARN", "ERROR"] as const);
  const deletionProtection = bool(read, "weft:deletionProtection");
  const invokableFunctionArns = list(read, "weft:invokableFunctionArns");
  const extraEventBusArns = list(read, "weft:extraEventBusArns");
  const alarmTopicArn = str(read, "weft:alarmTopicArn");
  const alarmEmail = str(read, "weft:alarmEmail");

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
      ...(retentionDays !== undefined ? { retentionDays } : {}),
      ...(workerMaxConcurrency !== undefined ? { workerMaxConcurrency } : {}),
      ...(logLevel ? { logLevel } : {}),
      ...(logRetentionDays !== undefined ? { logRetention: logRetentionDays as RetentionDays } : {}),
      ...(deletionProtection !== undefined ? { tableDeletionProtection: deletionProtection } : {}),
      ...(removal
        ? { removalPolicy: removal === "destroy" ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN }
        : {}),
      ...(invokableFunctionArns ? { invokableFunctionArns } : {}),
      ...(extraEventBusArns ? { extraEventBusArns } : {}),
    },
  };
}
