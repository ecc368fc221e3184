/**
 * AWS list prices the cost model and the benchmark apply: one place for prices. us-east-1, on-demand,
 * as published on the AWS pricing pages on 2026-11-29 (DynamoDB on-demand, SQS standard queues,
 * Lambda arm64, EventBridge custom events, S3 Standard, Step Functions). Free tiers are left out.
 */
export const PRICES = {
  dynamoWritePerMillionUnits: 0.625,
  dynamoReadPerMillionUnits: 0.125,
  sqsPerMillionRequests: 0.4,
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecondArm64: 0.0000133334,
  /** The worker function's memory (1 GB: infra/lib/functions.ts DEFAULT_FUNCTION_SETTINGS.worker). */
  lambdaMemoryGb: 1,
  eventBridgePerMillionEvents: 1.0,
  /** S3 Standard: PUT, COPY, POST, LIST $0.005 per 1,000; GET, SELECT and all other $0.0004 per 1,000. */
  s3PutPerMillionRequests: 5,
  s3GetPerMillionRequests: 0.4,
  /** S3 Standard, first 50 TB; DynamoDB Standard table class (beyond the free 25 GB). Per GB-month, GB = 2^30 bytes. */
  s3StoragePerGbMonth: 0.023,
  dynamoStoragePerGbMonth: 0.25,
  /**
   * Storage is paid for as long as values are kept: executions' items (DynamoDB TTL) and blobs (S3
   * lifecycle) expire `retentionDays` after the execution finishes, WeftOrchestrator's default 30.
   */
  retentionDays: 30,
  hoursPerMonth: 730,
  stepFunctionsStandardPerMillionTransitions: 25,
} as const;

/**
 * Step Functions Express: $1.00 per million requests (workflow starts) and duration at $0.00001667
 * per GB-second (first tier), memory billed in 64 MB steps and time in 100 ms steps (minimum 100 ms).
 */
export const STEP_FUNCTIONS_EXPRESS = {
  perMillionRequests: 1.0,
  perGbSecond: 0.00001667,
  memoryStepMb: 64,
  durationStepMs: 100,
} as const;

/** Names the prices a modeled cost was computed at (the `model` field of a cost). */
export const PRICE_MODEL = "weft modeled cost: AWS us-east-1 on-demand list prices of 2026-11-29";
