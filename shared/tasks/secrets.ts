/**
 * Secret references: a value a definition names but never holds, `{"secret": "<name>"}`, resolved
 * when a node runs. A name starting with `ssm:` is an SSM Parameter Store parameter (read with
 * decryption), any other a Secrets Manager secret id or ARN (its SecretString). Resolved values live
 * only in memory, briefly (SecretCache), and are never logged, stored or returned: error messages
 * name the secret, never its value.
 */
import * as z from "../domain/zod.js";
import { TerminalError } from "./errors.js";

export const SSM_PREFIX = "ssm:";

/** Secrets Manager: a name (`prod/api-token`) or an ARN; SSM: `ssm:` + a parameter name or ARN. */
const SECRET_NAME = /^(ssm:[A-Za-z0-9_.\-/:]+|[A-Za-z0-9/_+=.@:-]+)$/;

export const secretRefSchema = z.strictObject({
  secret: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(2048),
      z.regex(
        SECRET_NAME,
        'secret must be a Secrets Manager secret name or ARN, or "ssm:" and a Parameter Store parameter name',
      ),
    ),
});

export type SecretRef = z.output<typeof secretRefSchema>;

export function isSecretRef(value: unknown): value is SecretRef {
  return (
    typeof value === "object" && value !== null && typeof (value as { secret?: unknown }).secret === "string"
  );
}

/** Where secrets are read from: AWS (secrets-aws.ts), weft.config.json locally, or a chain of them. */
/**
 * What messages call the AWS store (secrets-aws.ts); here, apart from the SDK clients, for the
 * worker's lazy store (lazy-aws.ts), which names it before it loads.
 */
export const AWS_SECRET_STORE = "AWS Secrets Manager and SSM Parameter Store";

export interface SecretStore {
  /** Where it looks, for messages ("Secrets Manager / SSM", "weft.config.json secrets"). */
  readonly description: string;
  /** The value, or undefined when this store has no such secret. Throws for anything else. */
  get(name: string, signal: AbortSignal): Promise<string | undefined>;
}

/** Secrets given as a plain map: `weft.config.json`'s `secrets` in the local runtime, and tests. */
export class MapSecretStore implements SecretStore {
  constructor(
    private readonly values: Readonly<Record<string, string>>,
    readonly description = "the given secrets",
  ) {}

  async get(name: string): Promise<string | undefined> {
    return Object.hasOwn(this.values, name) ? this.values[name] : undefined;
  }
}

/** Asks each store in turn; the first that has the secret answers. */
export class ChainSecretStore implements SecretStore {
  readonly description: string;
  constructor(private readonly stores: readonly SecretStore[]) {
    this.description = stores.map((store) => store.description).join(", then ");
  }

  async get(name: string, signal: AbortSignal): Promise<string | undefined> {
    for (const store of this.stores) {
      const value = await store.get(name, signal);
      if (value !== undefined) return value;
    }
    return undefined;
  }
}

/** One store from several (undefined ones left out); undefined when none is given. */
export function chainSecretStores(...stores: Array<SecretStore | undefined>): SecretStore | undefined {
  const present = stores.filter((store): store is SecretStore => store !== undefined);
  if (present.length <= 1) return present[0];
  return new ChainSecretStore(present);
}

/** How long a resolved value is reused. Short: a rotated secret is picked up within a minute. */
export const DEFAULT_SECRET_TTL_MS = 60_000;

/**
 * Resolves references through a store, keeping each value for `ttlMs` on the caller's clock (the
 * engine's, through the task context) and sharing one read among concurrent callers.
 */
export class SecretCache {
  private readonly entries = new Map<string, { value: Promise<string>; expiresAt: number }>();

  constructor(
    private readonly store: SecretStore | undefined,
    private readonly ttlMs: number = DEFAULT_SECRET_TTL_MS,
  ) {}

  resolve(name: string, now: number, signal: AbortSignal): Promise<string> {
    const cached = this.entries.get(name);
    if (cached && cached.expiresAt > now) return cached.value;
    const value = this.read(name, signal);
    const entry = { value, expiresAt: now + this.ttlMs };
    this.entries.set(name, entry);
    // A failed read is not kept: the next attempt asks again.
    value.catch(() => {
      if (this.entries.get(name) === entry) this.entries.delete(name);
    });
    return value;
  }

  private async read(name: string, signal: AbortSignal): Promise<string> {
    if (!this.store)
      throw new TerminalError(
        `secret "${name}" cannot be resolved: no secret store is configured for the http task`,
        { code: "SecretNotFound" },
      );
    const value = await this.store.get(name, signal);
    if (value === undefined)
      throw new TerminalError(`secret "${name}" was not found (looked in ${this.store.description})`, {
        code: "SecretNotFound",
      });
    return value;
  }
}
