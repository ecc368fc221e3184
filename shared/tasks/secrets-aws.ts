/** The SecretStore on AWS: Secrets Manager GetSecretValue, and SSM GetParameter for `ssm:` names. */
import { GetSecretValueCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { GetParameterCommand, type SSMClient } from "@aws-sdk/client-ssm";
import { classifyAwsError } from "./aws-errors.js";
import { TerminalError } from "./errors.js";
import { AWS_SECRET_STORE, type SecretStore, SSM_PREFIX } from "./secrets.js";

/** Errors the same read meets again (a missing secret is "not found" instead: the caller says so). */
const TERMINAL_SECRET_ERRORS = new Set([
  "DecryptionFailure",
  "InvalidParameterException",
  "InvalidRequestException",
  "ValidationException",
  "InvalidKeyId",
  "ParameterVersionNotFound",
]);
const NOT_FOUND = new Set(["ResourceNotFoundException", "ParameterNotFound"]);
/** A missing secret is not this store's to report: the caller names every store it asked. */
const isNotFound = (error: unknown) => error instanceof Error && NOT_FOUND.has(error.name);

export class AwsSecretStore implements SecretStore {
  readonly description = AWS_SECRET_STORE;

  constructor(
    private readonly secretsManager: SecretsManagerClient,
    private readonly ssm: SSMClient,
  ) {}

  async get(name: string, signal: AbortSignal): Promise<string | undefined> {
    const options = { abortSignal: signal };
    if (name.startsWith(SSM_PREFIX)) {
      const parameter = name.slice(SSM_PREFIX.length);
      try {
        const result = await this.ssm.send(
          new GetParameterCommand({ Name: parameter, WithDecryption: true }),
          options,
        );
        return result.Parameter?.Value;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw this.failure(error, signal, name, "ssm:GetParameter", parameter);
      }
    }
    let result: { SecretString?: string | undefined; SecretBinary?: Uint8Array | undefined };
    try {
      result = await this.secretsManager.send(new GetSecretValueCommand({ SecretId: name }), options);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw this.failure(error, signal, name, "secretsmanager:GetSecretValue", name);
    }
    if (result.SecretString === undefined)
      throw new TerminalError(
        `secret "${name}" has no SecretString (a binary secret cannot be a header value)`,
        { code: "SecretNotUsable" },
      );
    return result.SecretString;
  }

  /** IAM denial and requests that cannot succeed are terminal; anything else is retried. */
  private failure(
    error: unknown,
    signal: AbortSignal,
    name: string,
    action: string,
    resource: string,
  ): unknown {
    if (signal.aborted) return signal.reason;
    return classifyAwsError(error, {
      what: `reading secret "${name}"`,
      grant: { action, resource, contextKey: "weft:secretArns", prop: "secretArns" },
      terminal: TERMINAL_SECRET_ERRORS,
    });
  }
}
