/** Registering workflow definitions as immutable, content-addressed versions. */

import { invalidDefinition, notFound, RequestError } from "../domain/errors.js";
import { definitionHash } from "../domain/hash.js";
import type { WorkflowVersionRecord } from "../domain/records.js";
import { validateDefinition } from "../domain/validate.js";
import type { EngineContext } from "./context.js";
import type { RegisterResult } from "./views.js";
import { nodeTimeoutLimitSeconds } from "./worker-time.js";

/** Concurrent registrations of new content under one name race for the next version number. */
const MAX_VERSION_RACES = 10;

export async function registerWorkflow(ctx: EngineContext, raw: unknown): Promise<RegisterResult> {
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

  for (let race = 0; race < MAX_VERSION_RACES; race++) {
    const existing = await ctx.store.findWorkflowVersionByHash(definition.name, hash);
    if (existing !== undefined) {
      return { name: definition.name, version: existing, definitionHash: hash, created: false };
    }
    const latest = await ctx.store.getWorkflowVersion(definition.name);
    const version = (latest?.version ?? 0) + 1;
    const outcome = await ctx.store.putWorkflowVersion({
      name: definition.name,
      version,
      definitionHash: hash,
      definition,
      createdAt: ctx.clock.now(),
    });
    if (outcome === "created") return { name: definition.name, version, definitionHash: hash, created: true };
  }
  throw new RequestError("Busy", `too many concurrent registrations of "${definition.name}"; try again`);
}

export async function getWorkflow(
  ctx: EngineContext,
  name: string,
  version?: number,
): Promise<WorkflowVersionRecord> {
  const record = await ctx.store.getWorkflowVersion(name, version);
  if (!record) {
    throw notFound(
      version === undefined
        ? `workflow "${name}" does not exist`
        : `workflow "${name}" has no version ${version}`,
    );
  }
  return record;
}
