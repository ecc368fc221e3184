/**
 * A task type's registration rule that holds whatever value an expression would give (e.g. `http`'s
 * credential headers must be secret references, never a value computed at run time): its custom
 * issues carry this in their params, and validation (validate.ts) reports them even under an
 * expression. A module of its own so that task types name it without loading validation, which
 * only registration runs.
 */
export const CHECKED_UNDER_EXPRESSIONS = { checkedUnderExpressions: true } as const;
