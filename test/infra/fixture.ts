/**
 * Shared synthesis for the infra tests. template.test.ts runs every suite in one process: the
 * default stack is synthesized (and its four handlers bundled by esbuild) once, and CDK's asset
 * cache makes each variant stack cost only its synthesis.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { App, type Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import { afterAll } from "vitest";
import { REPO_ROOT, type WeftFunctionKind } from "../../infra/lib/functions.js";
import { WeftStack, type WeftStackProps } from "../../infra/lib/weft-stack.js";

/** The feature flags of cdk.json, so the tests synthesize exactly what `cdk synth` does. */
export const CDK_CONTEXT: Record<string, unknown> = JSON.parse(
  readFileSync(path.join(REPO_ROOT, "cdk.json"), "utf8"),
).context;

export const KINDS: readonly WeftFunctionKind[] = ["api", "worker", "sweeper", "dlq"];

export interface Synth {
  readonly app: App;
  readonly stack: WeftStack;
  readonly template: Template;
  /** The template as plain JSON. */
  readonly json: CfnTemplate;
  /** Logical id of a construct's CloudFormation resource (its default child). */
  logicalId(construct: { node: { defaultChild?: unknown } }): string;
  /** Logical id of a function's AWS::Lambda::Function. */
  functionId(kind: WeftFunctionKind): string;
}

export interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
  DependsOn?: string[];
  [key: string]: unknown;
}
export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, { Value: unknown }>;
  [key: string]: unknown;
}

/**
 * One cloud assembly directory for every app this process synthesizes: CDK caches staged (bundled)
 * assets per output directory, so the handlers are bundled once per test file, not once per stack.
 */
let outdir: string | undefined;
afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

/** A new app with cdk.json's context, sharing this process's assembly directory and asset cache. */
export function newApp(): App {
  outdir ??= mkdtempSync(path.join(tmpdir(), "weft-infra-test-"));
  return new App({ context: CDK_CONTEXT, outdir });
}

export function synthWeft(props: WeftStackProps = {}, id = "Weft"): Synth {
  const app = newApp();
  const stack = new WeftStack(app, id, props);
  const template = Template.fromStack(stack);
  const logicalId = (construct: { node: { defaultChild?: unknown } }): string => {
    const cfn = construct.node.defaultChild;
    if (!cfn) throw new Error("construct has no default child");
    return stack.resolve(stack.getLogicalId(cfn as Parameters<Stack["getLogicalId"]>[0])) as string;
  };
  return {
    app,
    stack,
    template,
    json: template.toJSON() as CfnTemplate,
    logicalId,
    functionId: (kind) => logicalId(stack.weft.functions[kind].function),
  };
}

let base: Synth | undefined;
/** The default stack, synthesized once per process and shared by the suites. */
export function baseSynth(): Synth {
  base ??= synthWeft();
  return base;
}

export function resourcesOfType(json: CfnTemplate, type: string): Array<[string, CfnResource]> {
  return Object.entries(json.Resources).filter(([, resource]) => resource.Type === type);
}

export function resource(json: CfnTemplate, logicalId: string): CfnResource {
  const found = json.Resources[logicalId];
  if (!found) throw new Error(`no resource ${logicalId}`);
  return found;
}

export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

/** Every statement of every IAM policy attached to the role of `fn`, with actions as arrays. */
export function statementsOf(synth: Synth, fn: lambda.Function): Array<Statement & { Action: string[] }> {
  const roleId = synth.logicalId(fn.role as unknown as { node: { defaultChild?: unknown } });
  const statements: Array<Statement & { Action: string[] }> = [];
  for (const [, policy] of resourcesOfType(synth.json, "AWS::IAM::Policy")) {
    const roles = (policy.Properties?.Roles ?? []) as Array<{ Ref?: string }>;
    if (!roles.some((role) => role.Ref === roleId)) continue;
    const document = policy.Properties?.PolicyDocument as { Statement: Statement[] };
    for (const statement of document.Statement) {
      statements.push({ ...statement, Action: ([] as string[]).concat(statement.Action) });
    }
  }
  return statements;
}

/** Resources of a statement as an array (a single resource becomes a one-element array). */
export function resourcesOf(statement: Statement): unknown[] {
  return Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
}

/** True when `value` (a resolved CloudFormation expression) refers to the logical id `id`. */
export function refersTo(value: unknown, id: string): boolean {
  return JSON.stringify(value).includes(`"${id}"`);
}

/** Actions granted by the statements whose resources refer to the logical id `id`. */
export function actionsOn(statements: Array<Statement & { Action: string[] }>, id: string): Set<string> {
  const actions = new Set<string>();
  for (const statement of statements) {
    if (statement.Effect !== "Allow") continue;
    if (resourcesOf(statement).some((r) => refersTo(r, id))) {
      for (const action of statement.Action) actions.add(action);
    }
  }
  return actions;
}

export function allActions(statements: Array<Statement & { Action: string[] }>): Set<string> {
  return new Set(statements.flatMap((statement) => statement.Action));
}
