/**
 * What every role did with its grants: each allowed call marks the grants it used (and by whom: the
 * handler or the event source mapping), each refused call is kept as a denial. At the end, the
 * grants no call used are the unused grants — except those the Lambda platform itself uses with the
 * role (CloudWatch Logs writes, X-Ray), which no handler call would ever show.
 */
import { type Grant, grantKey, grantsOf, type LabeledStatement } from "./policy.js";

/** Services whose grants the Lambda platform uses, not the code: never reported as unused. */
export const PLATFORM_SERVICES: readonly string[] = ["logs", "xray"];

export interface Denial {
  principal: string;
  caller: string;
  operation: string;
  action: string;
  resource: string;
  reason: string;
}

export interface UnusedGrant extends Grant {
  principal: string;
}

interface Use {
  calls: number;
  callers: Set<string>;
}

interface PrincipalUsage {
  grants: Grant[];
  uses: Map<string, Use>;
  /** Allowed calls by action. */
  actions: Map<string, number>;
}

export class GrantLedger {
  private readonly principals = new Map<string, PrincipalUsage>();
  private readonly denied: Denial[] = [];

  /** Registers a principal (a function's role) with the statements it was granted. */
  register(principal: string, statements: readonly LabeledStatement[]): void {
    this.principals.set(principal, { grants: grantsOf(statements), uses: new Map(), actions: new Map() });
  }

  recordAllowed(principal: string, caller: string, action: string, grants: readonly Grant[]): void {
    const usage = this.principals.get(principal);
    if (!usage) throw new Error(`unknown principal ${principal}`);
    for (const grant of grants) {
      const key = grantKey(grant);
      const use = usage.uses.get(key) ?? { calls: 0, callers: new Set<string>() };
      use.calls++;
      use.callers.add(caller);
      usage.uses.set(key, use);
    }
    usage.actions.set(action, (usage.actions.get(action) ?? 0) + 1);
  }

  recordDenied(denial: Denial): void {
    this.denied.push(denial);
  }

  denials(): readonly Denial[] {
    return this.denied;
  }

  /** Allowed calls of `action` by the principal so far. */
  calls(principal: string, action: string): number {
    return this.principals.get(principal)?.actions.get(action) ?? 0;
  }

  /** How often a grant was used, and by whom (the handler, the event source mapping). */
  useOf(principal: string, grant: Grant): { calls: number; callers: string[] } {
    const use = this.principals.get(principal)?.uses.get(grantKey(grant));
    return { calls: use?.calls ?? 0, callers: [...(use?.callers ?? [])].sort() };
  }

  grantsOf(principal: string): readonly Grant[] {
    return this.principals.get(principal)?.grants ?? [];
  }

  principalNames(): string[] {
    return [...this.principals.keys()];
  }

  /** Grants no call used, platform grants left out. */
  unused(): UnusedGrant[] {
    const unused: UnusedGrant[] = [];
    for (const [principal, usage] of this.principals) {
      for (const grant of usage.grants) {
        if (isPlatformGrant(grant)) continue;
        if (!usage.uses.has(grantKey(grant))) unused.push({ principal, ...grant });
      }
    }
    return unused;
  }
}

export function isPlatformGrant(grant: Grant): boolean {
  const service = grant.action.split(":")[0]?.toLowerCase() ?? "";
  return PLATFORM_SERVICES.includes(service);
}
