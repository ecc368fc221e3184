/**
 * Each AWS::Lambda::Function of the template as the rehearsal runs it: its bundled code from the
 * cloud assembly, its handler, timeout and memory, and its environment — the template's variables
 * resolved to the physical resources, the variables the Lambda runtime sets, fake credentials, and
 * the endpoint of its own IAM-enforcing proxy. Nothing is inherited from the rehearsal's environment.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { type ResolveScope, resolveString } from "../cfn/intrinsics.js";
import { type CfnTemplate, resourcesOfType, targetId } from "../cfn/template.js";
import { FAKE_CREDENTIALS } from "../target/target.js";
import type { FunctionSpec } from "./pool.js";

export interface TemplateFunction {
  logicalId: string;
  roleLogicalId: string;
  functionName: string;
  functionArn: string;
  timeoutSeconds: number;
  memorySize: number;
  runtime: string;
  handler: string;
  codeDir: string;
  /** The template's variables, resolved. */
  variables: Record<string, string>;
}

export function templateFunctions(
  template: CfnTemplate,
  scope: ResolveScope,
  assetDirs: ReadonlyMap<string, string>,
): TemplateFunction[] {
  return resourcesOfType(template, "AWS::Lambda::Function").map(([logicalId, resource]) => {
    const props = resource.Properties ?? {};
    const code = props.Code as { S3Key?: unknown; ZipFile?: unknown } | undefined;
    const key = typeof code?.S3Key === "string" ? code.S3Key : undefined;
    const codeDir = key === undefined ? undefined : assetDirs.get(key);
    if (!codeDir || !existsSync(codeDir)) {
      throw new Error(
        `${logicalId}: its code (${key ?? "inline"}) is not an asset directory of the cloud assembly`,
      );
    }
    const roleLogicalId = targetId(props.Role);
    if (!roleLogicalId) throw new Error(`${logicalId}: its Role is not a role of the template`);
    const physical = scope.resources.get(logicalId);
    if (!physical?.attributes.Arn) throw new Error(`${logicalId}: no physical name`);
    const raw = ((props.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ??
      {}) as Record<string, unknown>;
    const variables = Object.fromEntries(
      Object.entries(raw).map(([name, value]) => [name, resolveString(value, scope, `${logicalId} ${name}`)]),
    );
    return {
      logicalId,
      roleLogicalId,
      functionName: physical.ref,
      functionArn: physical.attributes.Arn,
      timeoutSeconds: Number(props.Timeout ?? 3),
      memorySize: Number(props.MemorySize ?? 128),
      runtime: String(props.Runtime ?? "nodejs"),
      handler: String(props.Handler ?? "index.handler"),
      codeDir,
      variables,
    };
  });
}

/** The process environment of one function's execution environments. */
export function functionSpec(
  fn: TemplateFunction,
  options: { endpoint: string; region: string; tmpDir: string },
): FunctionSpec {
  const variables = { ...fn.variables };
  // An endpoint in the template would bypass the IAM proxy (and would be wrong in AWS too).
  for (const name of Object.keys(variables)) if (name.startsWith("AWS_ENDPOINT_URL")) delete variables[name];
  const logStream = `rehearsal/[$LATEST]${fn.logicalId}`;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    LANG: "en_US.UTF-8",
    TZ: ":UTC",
    HOME: options.tmpDir,
    // No shared config or credentials file may leak into the function.
    AWS_CONFIG_FILE: path.join(options.tmpDir, "no-aws-config"),
    AWS_SHARED_CREDENTIALS_FILE: path.join(options.tmpDir, "no-aws-credentials"),
    ...variables,
    AWS_REGION: options.region,
    AWS_DEFAULT_REGION: options.region,
    AWS_ACCESS_KEY_ID: FAKE_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: FAKE_CREDENTIALS.secretAccessKey,
    AWS_SESSION_TOKEN: FAKE_CREDENTIALS.sessionToken,
    AWS_ENDPOINT_URL: options.endpoint,
    AWS_LAMBDA_FUNCTION_NAME: fn.functionName,
    AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memorySize),
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${fn.functionName}`,
    AWS_LAMBDA_LOG_STREAM_NAME: logStream,
    AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
    AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
    LAMBDA_TASK_ROOT: fn.codeDir,
    _HANDLER: fn.handler,
  };
  return {
    logicalId: fn.logicalId,
    functionName: fn.functionName,
    functionArn: fn.functionArn,
    timeoutSeconds: fn.timeoutSeconds,
    memorySize: fn.memorySize,
    runtime: fn.runtime,
    codeDir: fn.codeDir,
    handler: fn.handler,
    env,
  };
}
