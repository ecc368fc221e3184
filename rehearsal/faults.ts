/**
 * Crashes on cue: a scenario asks for a function's execution environment to die at a chosen AWS
 * call — before it reaches the emulator (the write never happens) or right after (it happened, and
 * the function never learns it did). The function's IAM proxy consults these rules on every call
 * and kills the calling environment (known by the access key it signs with) when one matches.
 */

export interface CallFacts {
  operation: string;
  /** The request body as text (DynamoDB JSON for a table write). */
  body: string;
}

export interface FaultRule {
  principal: string;
  at: "before" | "after";
  matches(call: CallFacts): boolean;
  /** How many more times it fires (Infinity: until removed). */
  remaining: number;
  hits: number;
}

export class Faults {
  private readonly rules = new Set<FaultRule>();

  add(rule: {
    principal: string;
    at: "before" | "after";
    matches(call: CallFacts): boolean;
    times?: number;
  }): FaultRule & {
    remove(): void;
  } {
    const added: FaultRule = { ...rule, remaining: rule.times ?? 1, hits: 0 };
    this.rules.add(added);
    return Object.assign(added, { remove: () => this.rules.delete(added) });
  }

  /** The first rule for `principal` that matches the call (and counts it), if any. */
  take(principal: string, call: CallFacts): "before" | "after" | undefined {
    for (const rule of this.rules) {
      if (rule.principal !== principal || !rule.matches(call)) continue;
      rule.hits++;
      rule.remaining--;
      if (rule.remaining <= 0) this.rules.delete(rule);
      return rule.at;
    }
    return undefined;
  }

  clear(): void {
    this.rules.clear();
  }
}
