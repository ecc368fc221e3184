/**
 * The policies that decide a function's calls, read from the template: every statement of its
 * role's policies (AWS::IAM::Policy resources attached to it and the role's inline policies), and
 * the Deny statements of the resource policies (bucket and queue policies) that apply to it, with
 * their ARNs resolved to what the rehearsal stood up.
 */
import { type ResolveScope, resolveIntrinsics } from "../cfn/intrinsics.js";
import {
  asList,
  type CfnTemplate,
  type PolicyStatement,
  resourcesOfType,
  targetId,
} from "../cfn/template.js";
import type { LabeledStatement } from "./policy.js";

export interface RolePolicies {
  roleLogicalId: string;
  roleArn: string;
  /** Identity statements (Allow and Deny) of the role. */
  identity: LabeledStatement[];
  /** Deny statements of resource policies whose Principal covers the role. */
  resourceDenies: LabeledStatement[];
}

interface PolicyDocument {
  Statement?: PolicyStatement | PolicyStatement[];
}

function statementsOf(document: unknown, label: string, scope: ResolveScope): LabeledStatement[] {
  const resolved = resolveIntrinsics(document, scope) as PolicyDocument;
  return asList(resolved.Statement).map((statement, i) => ({ id: `${label}[${i}]`, statement }));
}

function principalCovers(principal: unknown, roleArn: string): boolean {
  if (principal === "*") return true;
  if (principal === null || typeof principal !== "object") return false;
  const aws = asList((principal as { AWS?: string | string[] }).AWS);
  return aws.some((entry) => entry === "*" || entry === roleArn);
}

export function rolePolicies(
  template: CfnTemplate,
  roleLogicalId: string,
  scope: ResolveScope,
): RolePolicies {
  const role = template.Resources[roleLogicalId];
  if (role?.Type !== "AWS::IAM::Role") throw new Error(`${roleLogicalId} is not an AWS::IAM::Role`);
  const roleArn = scope.resources.get(roleLogicalId)?.attributes.Arn;
  if (!roleArn) throw new Error(`the role ${roleLogicalId} has no ARN in the rehearsal`);
  if (asList(role.Properties?.ManagedPolicyArns as string[] | undefined).length > 0) {
    throw new Error(`the role ${roleLogicalId} has managed policies, which the rehearsal cannot read`);
  }
  const identity: LabeledStatement[] = [];
  for (const [i, inline] of asList(
    role.Properties?.Policies as Array<{ PolicyDocument: unknown }> | undefined,
  ).entries()) {
    identity.push(...statementsOf(inline.PolicyDocument, `${roleLogicalId}.Policies[${i}]`, scope));
  }
  for (const [policyId, policy] of resourcesOfType(template, "AWS::IAM::Policy")) {
    const roles = asList(policy.Properties?.Roles as unknown[] | undefined);
    if (!roles.some((entry) => targetId(entry) === roleLogicalId)) continue;
    identity.push(...statementsOf(policy.Properties?.PolicyDocument, policyId, scope));
  }
  const resourceDenies: LabeledStatement[] = [];
  for (const type of ["AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy"]) {
    for (const [policyId, policy] of resourcesOfType(template, type)) {
      for (const labeled of statementsOf(policy.Properties?.PolicyDocument, policyId, scope)) {
        if (labeled.statement.Effect === "Deny" && principalCovers(labeled.statement.Principal, roleArn)) {
          resourceDenies.push(labeled);
        }
      }
    }
  }
  return { roleLogicalId, roleArn, identity, resourceDenies };
}
