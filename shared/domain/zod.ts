/**
 * weft's zod: `zod/mini`, configured as classic zod configures itself. Every module of weft that
 * builds or parses a schema imports zod from here (`import * as z from "…/domain/zod.js"`), never
 * from "zod": classic zod hangs every method on its schemas' prototypes, so a bundle that imports it
 * carries all of it (~100 KB at each function's init, issue 27), where mini's functions are
 * tree-shaken to the ones used. The namespace import matters as much: `import { z }` keeps every
 * export, the locales among them.
 *
 * Classic zod sets two things on first use that mini leaves to its user, set here alike, and only
 * when nothing set them before (as classic does: an explicit `z.config` wins whatever the order):
 * - English messages ("Invalid input: expected string, received number"): the API's 400 details,
 *   the CLI and the tests show them; without a locale mini says only "Invalid input". Only the
 *   `en` locale is imported, not the index of them all.
 * - The memoizer, through which a recursive schema (`z.json()`) parses a value that refers to
 *   itself as classic does.
 *
 * Users' task types still give classic schemas (`z.object(…)` from "zod"): both are `z.core.$ZodType`,
 * and a task type's schema is parsed with its own methods (`ownParse`/`ownSafeParse` below); both
 * throw a `$ZodError` (exported here).
 *
 * `z.core` is for types only (`z.core.$ZodType`, `z.core.$ZodIssue`): read as a value (`z.core.x`),
 * it keeps every export of zod's core in the bundle, all the locales with them (~400 KB).
 */
import type { output } from "zod/mini";
import type * as core from "zod/v4/core";
import { config, globalConfig, memoizer } from "zod/v4/core";
import en from "zod/v4/locales/en.js";

if (!globalConfig.localeError) config(en());
if (!globalConfig.memoizer) config({ memoizer: memoizer() });

export * from "zod/mini";
/** The error of every zod parse, classic or mini (a classic ZodError is one too). */
export { $ZodError } from "zod/v4/core";

/** What a task type's schema is asked: its own `parse` and `safeParse`. */
interface OwnParser<T> {
  parse(value: unknown): T;
  safeParse(value: unknown): core.util.SafeParseResult<T>;
}

/**
 * A task type's params parsed with the schema's own `parse`, as the engine always has: the schema is
 * mini (the built-in types'), classic (a user's), another copy of zod's, or any object with `parse`
 * and `safeParse`, which is what a task module's `params` must have (shared/tasks/task-modules.ts).
 * Throws the schema's own error (a classic ZodError, a mini $ZodError, …).
 */
export function ownParse<S extends core.$ZodType>(schema: S, value: unknown): output<S> {
  return (schema as unknown as OwnParser<output<S>>).parse(value);
}

/** `ownParse`'s safe form: the schema's own `safeParse`. */
export function ownSafeParse<S extends core.$ZodType>(
  schema: S,
  value: unknown,
): core.util.SafeParseResult<output<S>> {
  return (schema as unknown as OwnParser<output<S>>).safeParse(value);
}
