/**
 * An IAM policy evaluator for the statements of one principal: an explicit Deny wins, else an
 * Allow is needed (no Allow is an implicit deny). Actions match case-insensitively and resources
 * case-sensitively, both with `*` and `?` wildcards; NotAction and NotResource are honoured; the
 * string, ARN, Bool and Null condition operators are supported (with `…IfExists`), and any other
 * operator makes its statement not apply. Besides the decision it says which grants — (statement,
 * action pattern, resource pattern) — the request used, for the unused-grants report.
 */
import { asList, type PolicyStatement } from "../cfn/template.js";

/** One authorization check: what a request does, to what, with which condition keys. */
export interface AuthRequest {
  action: string;
  resource: string;
  context?: Readonly<Record<string, string | undefined>>;
}

export interface LabeledStatement {
  /** Stable name for reports, e.g. `WeftWorkerFunctionRoleDefaultPolicy392DAF39[3]`. */
  id: string;
  statement: PolicyStatement;
}

/** One (action pattern, resource pattern) of an Allow statement. */
export interface Grant {
  statementId: string;
  action: string;
  resource: string;
}

export type Decision =
  | { allowed: true; grants: Grant[] }
  | { allowed: false; reason: "explicit-deny"; deniedBy: string }
  | { allowed: false; reason: "no-allow" };

const patternCache = new Map<string, RegExp>();

/** IAM wildcard matching: `*` any run of characters, `?` any one; everything else literal. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const key = `${ignoreCase ? "i" : "c"}:${pattern}`;
  let regex = patternCache.get(key);
  if (!regex) {
    const source = pattern
      .split("")
      .map((ch) => (ch === "*" ? ".*" : ch === "?" ? "." : ch.replace(/[\\^$.|+()[\]{}]/g, "\\$&")))
      .join("");
    regex = new RegExp(`^${source}$`, ignoreCase ? "is" : "s");
    patternCache.set(key, regex);
  }
  return regex.test(value);
}

function matchingPatterns(patterns: string[], value: string, ignoreCase: boolean): string[] {
  return patterns.filter((pattern) => wildcardMatch(pattern, value, ignoreCase));
}

/** The action patterns of the statement that match, or ["NotAction"] when NotAction lets it through. */
function actionMatches(statement: PolicyStatement, action: string): string[] {
  if (statement.NotAction !== undefined) {
    return matchingPatterns(asList(statement.NotAction), action, true).length === 0
      ? [notLabel("NotAction", statement.NotAction)]
      : [];
  }
  return matchingPatterns(asList(statement.Action), action, true);
}

function resourceMatches(statement: PolicyStatement, resource: string): string[] {
  if (statement.NotResource !== undefined) {
    return matchingPatterns(asList(statement.NotResource), resource, false).length === 0
      ? [notLabel("NotResource", statement.NotResource)]
      : [];
  }
  return matchingPatterns(asList(statement.Resource), resource, false);
}

function notLabel(kind: string, value: string | string[]): string {
  return `${kind}(${asList(value).join(",")})`;
}

const NEGATED = new Set([
  "StringNotEquals",
  "StringNotEqualsIgnoreCase",
  "StringNotLike",
  "ArnNotEquals",
  "ArnNotLike",
]);

function compare(operator: string, expected: string, actual: string): boolean | undefined {
  switch (operator) {
    case "StringEquals":
    case "StringNotEquals":
    case "ArnEquals":
    case "ArnNotEquals":
      return expected === actual;
    case "StringEqualsIgnoreCase":
    case "StringNotEqualsIgnoreCase":
      return expected.toLowerCase() === actual.toLowerCase();
    case "StringLike":
    case "StringNotLike":
    case "ArnLike":
    case "ArnNotLike":
      return wildcardMatch(expected, actual);
    case "Bool":
      return expected.toLowerCase() === actual.toLowerCase();
    default:
      return undefined;
  }
}

/** One condition block entry (operator → key → values) against the request's context. */
function conditionHolds(
  rawOperator: string,
  key: string,
  expected: unknown,
  context: Readonly<Record<string, string | undefined>>,
): boolean {
  const operator = rawOperator.replace(/^For(Any|All)Value:/, "");
  const ifExists = operator.endsWith("IfExists");
  const base = ifExists ? operator.slice(0, -"IfExists".length) : operator;
  const actual = Object.entries(context).find(([name]) => name.toLowerCase() === key.toLowerCase())?.[1];
  const values = asList(expected as unknown).map(String);
  if (base === "Null") {
    const wantsMissing = values.some((value) => value.toLowerCase() === "true");
    return wantsMissing === (actual === undefined);
  }
  if (actual === undefined) return ifExists || NEGATED.has(base);
  const results = values.map((value) => compare(base, value, actual));
  if (results.some((result) => result === undefined)) return false;
  const anyMatch = results.some(Boolean);
  return NEGATED.has(base) ? !anyMatch : anyMatch;
}

function conditionsHold(statement: PolicyStatement, request: AuthRequest): boolean {
  const context = request.context ?? {};
  for (const [operator, entries] of Object.entries(statement.Condition ?? {})) {
    for (const [key, expected] of Object.entries(entries)) {
      if (!conditionHolds(operator, key, expected, context)) return false;
    }
  }
  return true;
}

/** Evaluates `request` against the statements (identity policies and the Deny statements that apply). */
export function evaluate(statements: readonly LabeledStatement[], request: AuthRequest): Decision {
  const grants: Grant[] = [];
  for (const { id, statement } of statements) {
    const actions = actionMatches(statement, request.action);
    if (actions.length === 0) continue;
    const resources = resourceMatches(statement, request.resource);
    if (resources.length === 0) continue;
    if (!conditionsHold(statement, request)) continue;
    if (statement.Effect === "Deny") return { allowed: false, reason: "explicit-deny", deniedBy: id };
    for (const action of actions) {
      for (const resource of resources) grants.push({ statementId: id, action, resource });
    }
  }
  return grants.length > 0 ? { allowed: true, grants } : { allowed: false, reason: "no-allow" };
}

/** Every grant of the Allow statements: each action pattern with each resource pattern. */
export function grantsOf(statements: readonly LabeledStatement[]): Grant[] {
  return statements.flatMap(({ id, statement }) => {
    if (statement.Effect !== "Allow") return [];
    const actions =
      statement.NotAction !== undefined
        ? [notLabel("NotAction", statement.NotAction)]
        : asList(statement.Action);
    const resources =
      statement.NotResource !== undefined
        ? [notLabel("NotResource", statement.NotResource)]
        : asList(statement.Resource);
    return actions.flatMap((action) => resources.map((resource) => ({ statementId: id, action, resource })));
  });
}

export function grantKey(grant: Grant): string {
  return `${grant.statementId}\u0000${grant.action.toLowerCase()}\u0000${grant.resource}`;
}
