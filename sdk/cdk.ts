/**
 * `weft-orchestrator/cdk`: the CDK constructs. In your own CDK app:
 *
 *   new WeftOrchestrator(this, "Weft", { tasks: "./src/tasks" });
 *
 * bundles your task modules into the functions (with local esbuild) and deploys the table, queues,
 * API, sweeper schedule and alarms (docs/deploy.md). Needs aws-cdk-lib, constructs and esbuild in
 * your project.
 */
export * from "../infra/lib/index.js";
