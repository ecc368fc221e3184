/** Registering workflow definitions as immutable, content-addressed versions. */
import { definitionHash } from "../domain/hash.js";
import type { WorkflowVersionRecord } from "../domain/records.js";
import { validateDefinition } from "../domain/validate.js";
import type { EngineContext } from "./context.js";
import { invalidDefinition, notFound, RequestError } from "../domain/errors.js";
import type { RegisterResult } from "./views.js";

/** Concurrent registrations of new content under one name race for the next version number. */
const MAX_VERSION_RACES = 10;

export async function registerWorkflow(ctx: EngineContext, raw: unknown): Promise<RegisterResult> {
  const validation = validateDefinition(raw, ctx.tasks);
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
