/**
 * `npm run bench -- --cold-start`: what each function's bundle costs a new Lambda instance (issue 27).
 * Each function (api, worker, sweeper, dlq) is bundled as the construct bundles it (the generated
 * entry of infra/lib/function-entry.ts with no custom tasks, the esbuild options of
 * infra/lib/bundle-options.ts), and beside them a minimal handler (bench/minimal-handler.ts: one
 * DynamoDB GetItem), into a temporary folder. Per bundle: its bytes; its module load time, a fresh
 * `node` process importing it and timing the import with performance.now() inside that process
 * (median of N runs, the bundles taking turns, after a round that warms the file cache); and the
 * packages that make it up, by bytes in the output (esbuild's metafile).
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type Metafile } from "esbuild";
import { FUNCTION_ENTRY_FILE, functionBuildOptions } from "../infra/lib/bundle-options.js";
import { renderFunctionEntry } from "../infra/lib/function-entry.js";
import { WEFT_FUNCTION_KINDS, type WeftFunctionKind } from "../infra/lib/functions.js";
import { percentile } from "./stats.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MINIMAL_HANDLER = path.join(ROOT, "bench", "minimal-handler.ts");

/** The issue's goal for every function bundle. */
export const COLD_START_TARGETS = { maxBytes: 600_000, maxLoadMs: 80 } as const;

export const MINIMAL_BUNDLE = "minimal (DynamoDB GetItem)";

export interface PackageBytes {
  /** An npm package's name, or `weft` for this repository's own modules. */
  name: string;
  /** Bytes it takes in the minified output. */
  bytes: number;
}

export interface ColdStartRow {
  bundle: string;
  /**
   * What a new instance loads at init: the entry module and the chunks it imports statically (source
   * maps, separate files, not counted). Before code splitting, the one output module.
   */
  bytes: number;
  /** The entry module alone. */
  entryBytes: number;
  /** Every module of the asset: `bytes` and the chunks loaded later by `import()`. */
  totalBytes: number;
  runs: number;
  /** The import of the entry in a fresh process (its static chunks with it): median, min and max of the runs, ms. */
  loadMs: { median: number; min: number; max: number };
  /** The same with --enable-source-maps, as the deployed functions run (NODE_OPTIONS). Median, ms. */
  loadMsWithSourceMaps: number;
  /** CPU time (user + system) of the import, median of the runs, ms. */
  cpuMs: number;
  /** Every package loaded at init, largest first. */
  packages: PackageBytes[];
  /** The chunks loaded later, on first use, largest first. */
  lazyChunks: LazyChunk[];
}

export interface ColdStartResult {
  date: string;
  node: string;
  cores: number;
  targets: typeof COLD_START_TARGETS;
  rows: ColdStartRow[];
}

/** The package an esbuild input path belongs to (the last node_modules segment), else weft's own. */
export function packageOf(input: string): string {
  const parts = input.split(/[\\/]/);
  const at = parts.lastIndexOf("node_modules");
  if (at < 0) return "weft";
  const first = parts[at + 1] ?? "?";
  return first.startsWith("@") ? `${first}/${parts[at + 2] ?? "?"}` : first;
}

/** The inputs that made it into one output (the metafile's `inputs` also lists what tree shaking dropped), with their bytes. */
function contentsOf(output: Metafile["outputs"][string]): Array<[string, { bytesInOutput: number }]> {
  return Object.entries(output.inputs).filter(([, { bytesInOutput }]) => bytesInOutput > 0);
}

function packagesOf(contents: Array<[string, { bytesInOutput: number }]>): PackageBytes[] {
  const bytes = new Map<string, number>();
  for (const [input, { bytesInOutput }] of contents)
    bytes.set(packageOf(input), (bytes.get(packageOf(input)) ?? 0) + bytesInOutput);
  return [...bytes].map(([name, b]) => ({ name, bytes: b })).sort((a, b) => b.bytes - a.bytes);
}

/**
 * A split bundle's outputs in two: what the entry loads at init (itself and the chunks it imports
 * statically, transitively) and the chunks only `import()` reaches, each with the inputs that make
 * it up. Source maps are left out.
 */
export function splitOutputs(metafile: Metafile, entryFile: string) {
  const modules = Object.entries(metafile.outputs).filter(([file]) => file.endsWith(".mjs"));
  const byFile = new Map(modules.map(([file, output]) => [path.resolve(ROOT, file), { file, output }]));
  const entry = byFile.get(entryFile);
  if (entry === undefined) throw new Error(`esbuild's metafile has no output ${entryFile}`);
  const atInit = new Set<string>();
  const visit = (file: string) => {
    if (atInit.has(file)) return;
    atInit.add(file);
    for (const { path: imported, kind } of byFile.get(file)?.output.imports ?? [])
      if (
        kind === "import-statement" &&
        !imported.startsWith("node:") &&
        byFile.has(path.resolve(ROOT, imported))
      )
        visit(path.resolve(ROOT, imported));
  };
  visit(entryFile);
  /** The outputs that import `file`, by `import` or `import()`. */
  const importersOf = (file: string) =>
    [...byFile.entries()]
      .filter(([, { output }]) => output.imports.some((i) => path.resolve(ROOT, i.path) === file))
      .map(([importer]) => importer);
  const describe = (file: string) => {
    const { output } = byFile.get(file)!;
    return { file, bytes: output.bytes, contents: contentsOf(output), importedBy: importersOf(file) };
  };
  return {
    init: [...atInit].map(describe),
    lazy: [...byFile.keys()].filter((file) => !atInit.has(file)).map(describe),
  };
}

/** A chunk that only `import()` reaches: its bytes and what it holds. */
export interface LazyChunk {
  /** The chunk's file name in the asset (chunks/...). */
  file: string;
  bytes: number;
  /** Its packages, largest first. */
  packages: PackageBytes[];
  /** The chunks that import it (file names as `file`): it loads no sooner than one of them. */
  importedBy: string[];
}

/** Bundles one entry as the construct does; returns the entry's path, what loads at init and what later. */
async function bundle(entry: string, outDir: string) {
  const result = await build(functionBuildOptions({ entry, outdir: outDir, absWorkingDir: ROOT }));
  const entryFile = path.join(outDir, FUNCTION_ENTRY_FILE);
  const { init, lazy } = splitOutputs(result.metafile, entryFile);
  const sum = (xs: { bytes: number }[]) => xs.reduce((total, x) => total + x.bytes, 0);
  const initContents = init.flatMap((o) => o.contents);
  const allContents = [...initContents, ...lazy.flatMap((o) => o.contents)];
  return {
    outfile: entryFile,
    /** The entry module alone. */
    entryBytes: (await stat(entryFile)).size,
    /** What Lambda's init loads: the entry and its static chunks. */
    bytes: sum(init),
    /** Every module of the asset, lazy chunks included. */
    totalBytes: sum(init) + sum(lazy),
    /** The packages loaded at init. */
    packages: packagesOf(initContents),
    /** The packages of the whole asset. */
    allPackages: packagesOf(allContents),
    /** The modules loaded at init, by path from the repository root. */
    inputs: initContents.map(([input]) => input),
    /** Every module of the asset. */
    allInputs: allContents.map(([input]) => input),
    lazyChunks: lazy
      .map((o) => ({
        file: path.relative(outDir, o.file),
        bytes: o.bytes,
        packages: packagesOf(o.contents),
        importedBy: o.importedBy.map((file) => path.relative(outDir, file)),
      }))
      .sort((a, b) => b.bytes - a.bytes),
  };
}

/** Bundles one function as the construct does, with no custom tasks, into `outDir`. */
export async function bundleFunction(kind: WeftFunctionKind, outDir: string) {
  await mkdir(outDir, { recursive: true });
  const entry = path.join(outDir, `${kind}-entry.mjs`);
  await writeFile(entry, renderFunctionEntry(kind, []));
  return bundle(entry, outDir);
}

/** Run inside the fresh process: times the import of the module named by its first argument. */
const LOAD_SCRIPT = [
  "const cpu0 = process.cpuUsage();",
  "const t0 = performance.now();",
  "await import(process.argv[1]);",
  "const ms = performance.now() - t0;",
  "const cpu = process.cpuUsage(cpu0);",
  "process.stdout.write(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000 }));",
  "process.exit(0);",
].join("\n");

/** One fresh process importing `file`: the import's wall and CPU time, ms. */
function loadOnce(file: string, sourceMaps: boolean): Promise<{ ms: number; cpuMs: number }> {
  const { NODE_OPTIONS: _ignored, ...env } = process.env;
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        ...(sourceMaps ? ["--enable-source-maps"] : []),
        "--input-type=module",
        "-e",
        LOAD_SCRIPT,
        pathToFileURL(file).href,
      ],
      { env: { ...env, AWS_REGION: env.AWS_REGION ?? "us-east-1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => {
      if (code !== 0) return reject(new Error(`importing ${file} exited ${code}: ${stderr.slice(0, 500)}`));
      try {
        resolve(JSON.parse(stdout) as { ms: number; cpuMs: number });
      } catch {
        reject(new Error(`importing ${file} printed no timing: ${stdout.slice(0, 200)}`));
      }
    });
  });
}

/**
 * Loads every file `runs` times, round by round (each file once a round, plain then with source
 * maps), after one round that warms the file cache: on a shared machine the bundles then see the
 * same load, and their differences stay meaningful.
 */
async function measureLoads(files: readonly string[], runs: number) {
  const samples = files.map(() => ({ times: [] as number[], cpu: [] as number[], withMaps: [] as number[] }));
  for (const file of files) await loadOnce(file, false);
  for (let round = 0; round < runs; round++) {
    for (const [i, file] of files.entries()) {
      const { ms, cpuMs } = await loadOnce(file, false);
      samples[i]!.times.push(ms);
      samples[i]!.cpu.push(cpuMs);
      samples[i]!.withMaps.push((await loadOnce(file, true)).ms);
    }
  }
  const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
  return samples.map(({ times, cpu, withMaps }) => {
    const t = sorted(times);
    return {
      loadMs: { median: percentile(t, 50), min: t[0] ?? Number.NaN, max: t[t.length - 1] ?? Number.NaN },
      cpuMs: percentile(sorted(cpu), 50),
      loadMsWithSourceMaps: percentile(sorted(withMaps), 50),
    };
  });
}

export async function measureColdStart(
  options: { quick?: boolean; runs?: number; log?: (line: string) => void } = {},
): Promise<ColdStartResult> {
  const runs = options.runs ?? (options.quick ? 3 : 10);
  const log = options.log ?? (() => {});
  const dir = await mkdtemp(path.join(os.tmpdir(), "weft-cold-start-"));
  try {
    const bundles = [
      ...WEFT_FUNCTION_KINDS.map((kind) => ({
        name: kind,
        make: (out: string) => bundleFunction(kind, out),
      })),
      { name: MINIMAL_BUNDLE, make: (out: string) => bundle(MINIMAL_HANDLER, out) },
    ];
    const built = [];
    for (const [i, { name, make }] of bundles.entries()) {
      log(`cold start: bundling ${name}`);
      built.push({ name, ...(await make(path.join(dir, `out-${i}`))) });
    }
    log(`cold start: loading each bundle ${runs} times, round by round`);
    const loads = await measureLoads(
      built.map((b) => b.outfile),
      runs,
    );
    const rows: ColdStartRow[] = built.map((b, i) => ({
      bundle: b.name,
      bytes: b.bytes,
      entryBytes: b.entryBytes,
      totalBytes: b.totalBytes,
      runs,
      ...loads[i]!,
      packages: b.packages,
      lazyChunks: b.lazyChunks,
    }));
    return {
      date: new Date().toISOString(),
      node: process.version,
      cores: os.cpus().length,
      targets: COLD_START_TARGETS,
      rows,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const kb = (bytes: number) => (bytes / 1000).toFixed(0);
const ms = (x: number) => x.toFixed(0);

/**
 * When a lazy chunk loads, from the packages it holds: the `import()`s that reach them (a chunk of
 * weft's own modules alone loads with the package it goes with, named by its largest module).
 */
const LOADED_WHEN: Array<[RegExp, string]> = [
  [/^undici$/, "first `http` task"],
  [/^@aws-sdk\/client-s3$/, "first payload over the inline threshold (S3)"],
  [/^@aws-sdk\/client-lambda$/, "first `lambda` task"],
  [/^@aws-sdk\/client-(secrets-manager|ssm)$/, "first secret reference of an `http` task"],
  [
    /^@aws-sdk\/(credential-provider-(?!env)|nested-clients|token-providers)|^@smithy\/credential-provider-imds$/,
    "credentials not in the environment (never in Lambda)",
  ],
  [/^bowser$/, "never in Node (the SDK's browser user agent)"],
];

/**
 * When a lazy chunk loads: by the packages it holds, else when the chunks that import it do (a
 * chunk of code shared by two lazy ones loads with the first of them).
 */
export function loadedWhen(chunk: LazyChunk, chunks: readonly LazyChunk[], seen = new Set<string>()): string {
  const reasons = new Set<string>();
  for (const { name } of chunk.packages)
    for (const [pattern, reason] of LOADED_WHEN) if (pattern.test(name)) reasons.add(reason);
  if (reasons.size === 0 && !seen.has(chunk.file)) {
    seen.add(chunk.file);
    for (const importer of chunk.importedBy) {
      const from = chunks.find((c) => c.file === importer);
      if (from !== undefined)
        for (const reason of loadedWhen(from, chunks, seen).split("; ")) reasons.add(reason);
    }
  }
  reasons.delete("on first use");
  return reasons.size === 0 ? "on first use" : [...reasons].join("; ");
}

/** The cold-start table (markdown lines). */
export function renderColdStart(result: ColdStartResult): string[] {
  const { maxBytes, maxLoadMs } = result.targets;
  return [
    `Goal: every function ≤ ${kb(maxBytes)} KB and ≤ ${maxLoadMs} ms module load. The functions are split (esbuild \`splitting\`): a new instance loads at init the entry and the chunks it imports statically (KB at init, what the goal counts); the chunks that only \`import()\` reaches load on first use (below the table). KB = 1,000 bytes of minified modules (source maps are separate files). Load: a fresh \`node\` importing the entry, performance.now() around the import, median of ${result.rows[0]?.runs ?? 0} runs, the bundles taking turns (min–max beside it); CPU: user + system time of that import; with source maps: the same under --enable-source-maps, as deployed.`,
    "",
    "| bundle | KB at init | entry KB | all chunks KB | load ms (median) | min–max ms | CPU ms | load ms with source maps | top 5 packages at init (KB) |",
    "|---|---|---|---|---|---|---|---|---|",
    ...result.rows.map(
      (r) =>
        `| ${r.bundle} | ${kb(r.bytes)} | ${kb(r.entryBytes)} | ${kb(r.totalBytes)} | ${ms(r.loadMs.median)} | ${ms(r.loadMs.min)}–${ms(r.loadMs.max)} | ${ms(r.cpuMs)} | ${ms(r.loadMsWithSourceMaps)} | ${r.packages
          .slice(0, 5)
          .map((p) => `${p.name} ${kb(p.bytes)}`)
          .join(", ")} |`,
    ),
    "",
    "Loaded later, on first use (chunks of 1 KB and more):",
    "",
    "| bundle | chunk KB | loads on | top 3 packages (KB) |",
    "|---|---|---|---|",
    ...result.rows.flatMap((r) =>
      r.lazyChunks
        .filter((c) => c.bytes >= 1000)
        .map(
          (c) =>
            `| ${r.bundle} | ${kb(c.bytes)} | ${loadedWhen(c, r.lazyChunks)} | ${c.packages
              .slice(0, 3)
              .map((p) => `${p.name} ${kb(p.bytes)}`)
              .join(", ")} |`,
        ),
    ),
  ];
}

/**
 * The table beside a baseline run (bench/results/cold-start-before.json, the bundles before issue
 * 27's cuts): bytes and median load, then and now.
 */
export function renderColdStartComparison(before: ColdStartResult, now: ColdStartResult): string[] {
  return [
    `Before: ${before.date} (Node ${before.node}); now: ${now.date} (Node ${now.node}). Medians of ${now.rows[0]?.runs ?? 0} runs each.`,
    "",
    "| bundle | KB before | KB now | load ms before | load ms now | with source maps before | with source maps now |",
    "|---|---|---|---|---|---|---|",
    ...now.rows.map((r) => {
      const b = before.rows.find((row) => row.bundle === r.bundle);
      const was = (x: number | undefined, f: (x: number) => string) => (x === undefined ? "–" : f(x));
      return `| ${r.bundle} | ${was(b?.bytes, kb)} | ${kb(r.bytes)} | ${was(b?.loadMs.median, ms)} | ${ms(r.loadMs.median)} | ${was(b?.loadMsWithSourceMaps, ms)} | ${ms(r.loadMsWithSourceMaps)} |`;
    }),
  ];
}
