/** The synthesized CloudFormation template as plain JSON, and the lookups the rehearsal makes in it. */

export interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
  DependsOn?: string | string[];
  Metadata?: Record<string, unknown>;
}

export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, { Value: unknown }>;
}

export function resourcesOfType(template: CfnTemplate, type: string): Array<[string, CfnResource]> {
  return Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
}

export function resourceOf(template: CfnTemplate, logicalId: string): CfnResource {
  const found = template.Resources[logicalId];
  if (!found) throw new Error(`the template has no resource ${logicalId}`);
  return found;
}

export function propertiesOf(resource: CfnResource): Record<string, unknown> {
  return resource.Properties ?? {};
}

/** The logical id a `{Ref: id}` or `{"Fn::GetAtt": [id, attr]}` points at, else undefined. */
export function targetId(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const record = value as Record<string, unknown>;
  if (typeof record.Ref === "string") return record.Ref;
  const getAtt = record["Fn::GetAtt"];
  if (Array.isArray(getAtt) && typeof getAtt[0] === "string") return getAtt[0];
  if (typeof getAtt === "string") return getAtt.split(".")[0];
  return undefined;
}

/** A policy statement as IAM reads it (after intrinsics are resolved). */
export interface PolicyStatement {
  Sid?: string;
  Effect: "Allow" | "Deny";
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Principal?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

export function asList<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}
