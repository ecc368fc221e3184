/**
 * `weft init`: a project of one's own around weft — a CDK app with the construct, tasks/ with one
 * task, a workflow, a test on the in-memory runtime, weft.config.json and a README (templates/project).
 * Nothing is overwritten: a file the project already has is a conflict, and nothing is written.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ownPackageJson, PACKAGE_NAME, packageRoot, pinnedVersion } from "./package-root.js";

/** npm leaves `.gitignore` out of published packages, so the template keeps it under another name. */
const RENAMED: Readonly<Record<string, string>> = { gitignore: ".gitignore" };

/** What a new project depends on: weft, zod for task params, and what builds, tests and deploys it. */
const DEPENDENCIES = ["zod"] as const;
const DEV_DEPENDENCIES = [
  "aws-cdk",
  "aws-cdk-lib",
  "constructs",
  "esbuild",
  "tsx",
  "typescript",
  "vitest",
  "@types/node",
] as const;

const SCRIPTS: Readonly<Record<string, string>> = {
  dev: "weft dev",
  test: "vitest run",
  typecheck: "tsc --noEmit",
  validate: "weft validate workflows/hello.json",
  synth: "cdk synth",
  deploy: "cdk deploy",
};

export interface InitPlan {
  dir: string;
  /** Files to write, by path relative to `dir`. */
  files: Map<string, string>;
  /** Files of the template the project already has: reported, and nothing is written. */
  conflicts: string[];
}

function templateFiles(root: string, prefix = ""): string[] {
  return readdirSync(path.join(root, prefix)).flatMap((name) => {
    const relative = path.join(prefix, name);
    return statSync(path.join(root, relative)).isDirectory() ? templateFiles(root, relative) : [relative];
  });
}

/** A package name npm accepts, from a folder's name. */
export function packageNameOf(dir: string): string {
  const name = path
    .basename(path.resolve(dir))
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[._-]+/, "");
  return name === "" ? "weft-project" : name;
}

/** `my-app` → `MyApp`: the stack's name. */
function stackNameOf(name: string): string {
  const words = name.split(/[^a-zA-Z0-9]+/).filter((word) => word !== "");
  const pascal = words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join("");
  return /^[A-Za-z]/.test(pascal) ? pascal : `Weft${pascal}`;
}

type PackageJson = Record<string, unknown> & {
  name?: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

/**
 * The project's package.json: the existing one with weft's dependencies and scripts added where it
 * has none of its own (its spec of weft-orchestrator kept: e.g. the tarball it was installed from).
 */
export function projectPackageJson(existing: PackageJson | undefined, name: string): PackageJson {
  const base: PackageJson = existing ? structuredClone(existing) : { version: "0.1.0", private: true };
  // `npm install x` in an empty folder writes a package.json with dependencies only.
  const json: PackageJson = { name: base.name ?? name, ...base };
  json.type ??= "module";
  const node = ownPackageJson().engines?.node;
  if (node !== undefined) json.engines ??= { node };
  json.scripts = { ...SCRIPTS, ...json.scripts };
  const dependencies = { ...json.dependencies };
  dependencies[PACKAGE_NAME] ??= `^${ownPackageJson().version}`;
  for (const dependency of DEPENDENCIES) dependencies[dependency] ??= pinnedVersion(dependency);
  json.dependencies = sortKeys(dependencies);
  const devDependencies = { ...json.devDependencies };
  for (const dependency of DEV_DEPENDENCIES) {
    if (dependencies[dependency] === undefined) devDependencies[dependency] ??= pinnedVersion(dependency);
  }
  json.devDependencies = sortKeys(devDependencies);
  return json;
}

/**
 * The project's cdk.json: its app, and the feature flags weft itself is synthesized and tested with
 * (weft's own cdk.json, shipped in the package), without weft's own `weft:*` settings.
 */
export function projectCdkJson(): Record<string, unknown> {
  const own = JSON.parse(readFileSync(path.join(packageRoot(), "cdk.json"), "utf8")) as {
    context?: Record<string, unknown>;
  };
  const flags = Object.entries(own.context ?? {}).filter(([key]) => !key.startsWith("weft:"));
  return {
    app: "npx tsx infra/app.ts",
    watch: { include: ["infra/**", "tasks/**"] },
    context: Object.fromEntries(flags),
  };
}

function sortKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

/** What `weft init` would write into `dir`. */
export function planInit(dir: string): InitPlan {
  const target = path.resolve(dir);
  const templates = path.join(packageRoot(), "templates", "project");
  const packageFile = path.join(target, "package.json");
  const existing = existsSync(packageFile)
    ? (JSON.parse(readFileSync(packageFile, "utf8")) as PackageJson)
    : undefined;
  const name = existing?.name ?? packageNameOf(target);
  const files = new Map<string, string>();
  const conflicts: string[] = [];
  for (const source of templateFiles(templates)) {
    const relative = RENAMED[source] ?? source;
    if (existsSync(path.join(target, relative))) conflicts.push(relative);
    const text = readFileSync(path.join(templates, source), "utf8")
      .replaceAll("__STACK_NAME__", stackNameOf(name))
      .replaceAll("__PROJECT_NAME__", name);
    files.set(relative, text);
  }
  files.set("package.json", `${JSON.stringify(projectPackageJson(existing, name), null, 2)}\n`);
  if (existsSync(path.join(target, "cdk.json"))) conflicts.push("cdk.json");
  files.set("cdk.json", `${JSON.stringify(projectCdkJson(), null, 2)}\n`);
  return { dir: target, files, conflicts: conflicts.sort() };
}

/** Writes the plan's files (there must be no conflicts). */
export function writeInit(plan: InitPlan): void {
  if (plan.conflicts.length > 0) throw new Error("weft init: refusing to overwrite files");
  for (const [relative, text] of plan.files) {
    const file = path.join(plan.dir, relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
}
