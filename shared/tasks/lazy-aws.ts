/**
 * The `lambda` task's invoker and the `http` task's secret store, made on first use: a deployed
 * worker loads the Lambda, Secrets Manager and SSM clients (about 170 KB of bundle) by `import()`
 * when a `lambda` task first runs or an `http` task first reads a secret, not at a cold start. A
 * failed load is not kept: the next call tries again.
 */
import type { LambdaInvocationResult, LambdaInvoker } from "./lambda.js";
import type { SecretStore } from "./secrets.js";

/** Memoizes `load`, forgetting a failure. */
function onFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

export class LazyLambdaInvoker implements LambdaInvoker {
  private readonly invoker: () => Promise<LambdaInvoker>;

  constructor(load: () => Promise<LambdaInvoker>) {
    this.invoker = onFirstUse(load);
  }

  async invoke(
    functionName: string,
    qualifier: string | undefined,
    payload: unknown,
    signal: AbortSignal,
  ): Promise<LambdaInvocationResult> {
    return (await this.invoker()).invoke(functionName, qualifier, payload, signal);
  }
}

export class LazySecretStore implements SecretStore {
  private readonly store: () => Promise<SecretStore>;

  /** `description` is the loaded store's own, which messages name before any load. */
  constructor(
    readonly description: string,
    load: () => Promise<SecretStore>,
  ) {
    this.store = onFirstUse(load);
  }

  async get(name: string, signal: AbortSignal): Promise<string | undefined> {
    return (await this.store()).get(name, signal);
  }
}
