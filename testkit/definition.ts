/** A workflow definition as a test writes it (docs/language.md); registration checks it. */
import type { z } from "zod";
import type { workflowDefinitionSchema } from "../shared/domain/definition.js";

export type WorkflowDefinition = z.input<typeof workflowDefinitionSchema>;
