/** Command line of `npm run rehearse`, and the timings the rehearsal compresses. */

export interface RehearsalOptions {
  /** An emulator already running (LocalStack …); undefined starts moto for this run. */
  endpoint: string | undefined;
  /** Run only the scenarios whose name contains one of these. */
  only: string[];
  /** Keep the temporary directory (cloud assembly, function logs) even when everything passed. */
  keep: boolean;
}

export const USAGE = `Usage: npm run rehearse -- [--endpoint URL] [--only TEXT]... [--keep]

Synthesizes the sample stack, stands its resources up on an AWS emulator, runs the bundled
handlers with their roles enforced, and drives them as AWS would through the scenarios.

  --endpoint URL   rehearse against an emulator already running at URL (e.g. LocalStack,
                   http://localhost:4566) instead of starting moto; also WEFT_REHEARSE_ENDPOINT
  --only TEXT      run only the scenarios whose name contains TEXT (repeatable); the grants
                   report then covers only what those scenarios used
  --keep           keep the temporary directory (cloud assembly, function logs)`;

/**
 * What the rehearsal shortens, all through the sample app's own context keys: a 5 s lease and a
 * 30 s worker timeout (so the task queue's visibility is 180 s), and a sweeper that looks at an
 * execution 2 s after it starts and every 3 s after.
 */
export const COMPRESSED_CONTEXT: Readonly<Record<string, string>> = {
  "weft:leaseSeconds": "5",
  "weft:workerTimeoutSeconds": "30",
  "weft:sweepFirstCheckSeconds": "2",
  "weft:sweepIdleSeconds": "3",
  "weft:sweepGraceSeconds": "3",
};

/** The sweeper's one-minute schedule fires this often instead. */
export const SWEEP_INTERVAL_MS = 2_000;
/** Records a batch reports as failed come back after this many seconds, not the visibility timeout. */
export const FAILED_VISIBILITY_SECONDS = 1;
/** Execution environments per function at most (the machine has two cores). */
export const MAX_CONCURRENCY = 3;

export function parseOptions(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): RehearsalOptions | "help" {
  const options: RehearsalOptions = {
    endpoint: env.WEFT_REHEARSE_ENDPOINT || undefined,
    only: [],
    keep: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    if (arg === "--help" || arg === "-h") return "help";
    else if (arg === "--endpoint") options.endpoint = value();
    else if (arg.startsWith("--endpoint=")) options.endpoint = arg.slice("--endpoint=".length);
    else if (arg === "--only") options.only.push(value());
    else if (arg === "--keep") options.keep = true;
    else throw new Error(`unknown argument ${arg}\n\n${USAGE}`);
  }
  if (options.endpoint !== undefined) {
    const url = new URL(options.endpoint);
    if (url.protocol !== "http:")
      throw new Error(`--endpoint must be an http:// URL, got ${options.endpoint}`);
  }
  return options;
}
