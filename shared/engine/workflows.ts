/** Registering workflow definitions as immutable, content-addressed versions. */

import { childWorkflowParamsSchema } from "../domain/child.js";
import type { WorkflowDefinition } from "../domain/definition.js";
import { invalidDefinition, notFound, type ProblemDetail, RequestError } from "../domain/errors.js";
import { hasExpressions } from "../domain/expressions.js";
import { definitionHash } from "../domain/hash.js";
import type { WorkflowVersionRecord } from "../domain/records.js";
import type { EngineContext } from "./context.js";
import type { RegisterResult } from "./views.js";
import { nodeTimeoutLimitSeconds } from "./worker-time.js";

/** Concurrent registrations of new content under one name race for the next version number. */
const MAX_VERSION_RACES = 10;

export async function registerWorkflow(ctx: EngineContext, raw: unknown): Promise<RegisterResult> {
  // Validation (and jsonata, to compile the definition's expressions) loads on the first
  // registration: only the API registers, and the other functions' bundles leave it out.
  const { validateDefinition } = await import("../domain/validate.js");
  // No node may need more time than the deployment's worker gives it (worker-time.ts).
  const validation = validateDefinition(raw, ctx.tasks, {
    nodeTimeout: {
      maxSeconds: nodeTimeoutLimitSeconds(ctx.workerTimeoutSeconds),
      workerTimeoutSeconds: ctx.workerTimeoutSeconds,
    },
  });
  if (!validation.ok) throw invalidDefinition(validation.problems);
  const { definition } = validation;
  const hash = definitionHash(definition);
  const warnings = await childWarnings(ctx, definition);
  const noted = warnings.length > 0 ? { warnings } : {};

  for (let race = 0; race < MAX_VERSION_RACES; race++) {
    const existing = await ctx.store.findWorkflowVersionByHash(definition.name, hash);
    if (existing !== undefined) {
      return { name: definition.name, version: existing, definitionHash: hash, created: false, ...noted };
    }
    const latest = await ctx.store.getWorkflowVersion(definition.name);
    const version = (latest?.version ?? 0) + 1;
    const record: WorkflowVersionRecord = {
      name: definition.name,
      version,
      definitionHash: hash,
      definition,
      createdAt: ctx.clock.now(),
    };
    const outcome = await ctx.store.putWorkflowVersion(record);
    if (outcome === "created") {
      // This process's next start of the name uses the new version at once (workflow-cache.ts).
      ctx.workflows.registered(record);
      return { name: definition.name, version, definitionHash: hash, created: true, ...noted };
    }
  }
  throw new RequestError("Busy", `too many concurrent registrations of "${definition.name}"; try again`);
}

/**
 * A workflow version: an explicit one from the process's cache (versions never change; the HEAD is
 * never read for it), the latest as this process saw it within WEFT_WORKFLOW_HEAD_CACHE_MS
 * (workflow-cache.ts), or with `fresh` the latest as stored now.
 */
export async function getWorkflow(
  ctx: EngineContext,
  name: string,
  version?: number,
  options: { fresh?: boolean } = {},
): Promise<WorkflowVersionRecord> {
  if (options.fresh && version === undefined) ctx.workflows.forgetHead(name);
  const record =
    version === undefined ? await ctx.workflows.latest(name) : await ctx.workflows.version(name, version);
  if (!record) {
    throw notFound(
      version === undefined
        ? `workflow "${name}" does not exist`
        : `workflow "${name}" has no version ${version}`,
    );
  }
  return record;
}

/**
 * `workflow` nodes naming a workflow (or version) not registered yet: allowed — it may be registered
 * before the node runs, or the two may call each other — but worth a word to whoever registers it.
 */
async function childWarnings(ctx: EngineContext, definition: WorkflowDefinition): Promise<ProblemDetail[]> {
  const warnings: ProblemDetail[] = [];
  for (const [index, node] of definition.nodes.entries()) {
    // A `workflow` node names its child in its params; a `loop` in its params' `workflow`.
    const named =
      node.type === "workflow"
        ? node.params
        : node.type === "loop" && typeof node.params === "object" && node.params !== null
          ? (node.params as { workflow?: unknown }).workflow
          : undefined;
    if (named === undefined) continue;
    const params = childWorkflowParamsSchema.safeParse(named);
    if (!params.success || hasExpressions(params.data.name) || params.data.name === definition.name) continue;
    const found = await ctx.store.getWorkflowVersion(params.data.name, params.data.version);
    if (found) continue;
    warnings.push({
      path: `nodes[${index}].params${node.type === "loop" ? ".workflow" : ""}.name`,
      code: "unknown_workflow",
      message: `node "${node.id}" runs workflow "${params.data.name}"${
        params.data.version === undefined ? "" : ` version ${params.data.version}`
      }, which is not registered yet: the node fails unless it is by the time it runs`,
    });
  }
  return warnings;
}
