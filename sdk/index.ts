/**
 * `weft-orchestrator`: the task API and the HTTP client. The CDK constructs are at
 * `weft-orchestrator/cdk` and the test helpers at `weft-orchestrator/testing`, so that neither
 * aws-cdk-lib nor the in-memory engine is loaded by code that needs only these.
 */
import type { z } from "zod";
import type { workflowDefinitionSchema } from "../shared/domain/definition.js";

export * from "./client.js";
export * from "./tasks.js";

/** A workflow definition as you write it (docs/language.md); `POST /workflows` checks it. */
export type WorkflowDefinition = z.input<typeof workflowDefinitionSchema>;
