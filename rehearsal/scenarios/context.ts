/** What a scenario gets: the signed API caller, the operator's clients, the functions, the timings. */
import type { ApiCaller } from "../client.js";
import type { Faults } from "../faults.js";
import type { FunctionPool } from "../lambda/pool.js";
import type { SqsSource } from "../sources/sqs-source.js";
import type { AdminClients } from "../target/target.js";

export interface SweepTally {
  runs: number;
  recoveredLeases: number;
  errors: number;
}

export interface Timings {
  leaseSeconds: number;
  workerTimeoutSeconds: number;
  sweepIntervalMs: number;
  failedVisibilitySeconds: number;
}

export interface RehearsalContext {
  api: ApiCaller;
  admin: AdminClients;
  taskQueueUrl: string;
  deadLetterQueueUrl: string;
  functions: { api: FunctionPool; worker: FunctionPool; sweeper: FunctionPool; dlq: FunctionPool };
  /** The event sources of the task queue and the DLQ. */
  consumers: { worker: SqsSource; dlq: SqsSource };
  /** Crashes on cue, at a function's AWS call (faults.ts). */
  faults: Faults;
  /** The principal (short function name) of each part, for fault rules. */
  principals: { api: string; worker: string; sweeper: string; dlq: string };
  tableName: string;
  /** Calls of `action` the principal made so far (allowed ones), from the IAM ledger. */
  callCount(principal: string, action: string): number;
  sweeps: SweepTally;
  /** Holds the sweeper's schedule until the returned function is called (the scenario's window). */
  pauseSweeps(): () => void;
  timings: Timings;
  /** Makes names unique to this run (the target may outlive it). */
  unique(name: string): string;
}

export interface Scenario {
  name: string;
  /** The scenario fails when it takes longer. */
  timeoutMs: number;
  /** Throws when the deployed stack does not behave; returns a short note for the report. */
  run(ctx: RehearsalContext): Promise<string | undefined>;
}
