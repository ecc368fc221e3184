/**
 * Fails when the modules of a directory (shared/engine by default) import one another in a circle.
 * A cycle among the engine's modules is how it grew into one knot (issue 26): each module must only
 * import modules below it, and where a low module needs a higher one it is handed an object behind
 * a narrow interface (shared/engine/contracts.ts). Run in CI (.ci/run) as `npm run check:cycles`:
 *
 *   npx tsx tools/check-cycles.ts [dir ...]
 *
 * Every relative specifier counts, type-only ones too (`import type`, `export ... from`, `import "x"`,
 * `import("x")`), since a type import ties the modules' design together as much as a value one. The
 * imports are followed out of the directory as well (a cycle through shared/http/contract.ts is one),
 * and a cycle is reported when it passes through a module of the directory. The text is scanned,
 * not compiled (comments blanked first), so the check needs no dependency of its own.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** A knot of modules that reach one another, relative to `root`. */
export interface Cycle {
  /** Its shortest circle through its first module of the directory, in import order (the last imports the first). */
  cycle: string[];
  /** Every module of the knot: each is on some circle through the others. */
  knot: string[];
}

/** Source text with comments and the contents of strings blanked out (line breaks kept). */
function codeOnly(text: string): string {
  let out = "";
  // What encloses the current position: code (with its open braces) or a template literal.
  const stack: Array<{ kind: "code"; braces: number } | { kind: "template" }> = [{ kind: "code", braces: 0 }];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const top = stack[stack.length - 1]!;
    if (top.kind === "template") {
      if (c === "\\") {
        out += "  ";
        i += 2;
      } else if (c === "`") {
        out += c;
        stack.pop();
        i++;
      } else if (c === "$" && text[i + 1] === "{") {
        out += "${";
        stack.push({ kind: "code", braces: 0 });
        i += 2;
      } else {
        out += c === "\n" ? c : " ";
        i++;
      }
      continue;
    }
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      const end = text.indexOf("\n", i);
      i = end < 0 ? text.length : end;
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
    } else if (c === '"' || c === "'") {
      // A string keeps its quotes and its text (a specifier is one); it never spans lines.
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== "\n") j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === "`") {
      out += c;
      stack.push({ kind: "template" });
      i++;
    } else {
      if (c === "{") top.braces++;
      if (c === "}") {
        if (top.braces === 0 && stack.length > 1) stack.pop();
        else top.braces--;
      }
      out += c;
      i++;
    }
  }
  return out;
}

const SPECIFIERS = [
  // import x from "…", import type { … } from "…", export { … } from "…", export * from "…"
  /\b(?:import|export)\s+(?:type\s+)?[\w*\s{},$]*?\bfrom\s*(["'])([^"'\n]+)\1/g,
  // import "…" (for its effects)
  /\bimport\s*(["'])([^"'\n]+)\1/g,
  // import("…"), in code or in a type
  /\bimport\s*\(\s*(["'])([^"'\n]+)\1\s*\)/g,
];

/** The relative specifiers a module's text imports. */
export function importedSpecifiers(text: string): string[] {
  const code = codeOnly(text);
  const found = new Set<string>();
  for (const pattern of SPECIFIERS)
    for (const match of code.matchAll(pattern)) if (match[2]!.startsWith(".")) found.add(match[2]!);
  return [...found];
}

/** The TypeScript file a relative specifier names (`./x.js` is `./x.ts`), or undefined. */
function resolve(from: string, specifier: string): string | undefined {
  const target = path.resolve(path.dirname(from), specifier);
  const stem = target.replace(/\.(?:[cm]?js|jsx)$/, "");
  const candidates = [`${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, target, path.join(target, "index.ts")];
  return candidates.find((file) => /\.[cm]?tsx?$/.test(file) && existsSync(file) && statSync(file).isFile());
}

/**
 * The import cycles through the `.ts` modules directly in `dir`: one per knot of modules that reach
 * one another (a strongly connected component), named once however many circles it holds.
 */
export function findCycles(dir: string, root = process.cwd()): Cycle[] {
  const base = path.resolve(root, dir);
  const own = readdirSync(base)
    .filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts"))
    .map((name) => path.join(base, name))
    .sort();
  const inside = new Set(own);

  // The import graph of those modules and of every module they reach.
  const edges = new Map<string, string[]>();
  const pending = [...own];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (edges.has(file)) continue;
    const targets = importedSpecifiers(readFileSync(file, "utf8"))
      .map((specifier) => resolve(file, specifier))
      .filter((target): target is string => target !== undefined);
    edges.set(file, [...new Set(targets)].sort());
    pending.push(...targets);
  }

  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of edges.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      components.push(component);
    }
  };
  for (const file of [...edges.keys()].sort()) if (!index.has(file)) visit(file);

  const cycles: Cycle[] = [];
  for (const component of components) {
    const members = new Set(component);
    const start = component.filter((file) => inside.has(file)).sort()[0];
    if (start === undefined) continue;
    if (component.length === 1 && !(edges.get(start) ?? []).includes(start)) continue;
    const relative = (file: string) => path.relative(root, file);
    cycles.push({
      cycle: shortestCycle(start, members, edges).map(relative),
      knot: component.map(relative).sort(),
    });
  }
  return cycles.sort((a, b) => a.cycle[0]!.localeCompare(b.cycle[0]!));
}

/** The shortest path from `start` back to itself within `members` (breadth first). */
function shortestCycle(start: string, members: Set<string>, edges: Map<string, string[]>): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const file = queue[head]!;
    for (const target of edges.get(file) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const cycle = [file];
        while (cycle[0] !== start) cycle.unshift(previous.get(cycle[0]!)!);
        return cycle;
      }
      if (!previous.has(target)) {
        previous.set(target, file);
        queue.push(target);
      }
    }
  }
  return [start];
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const dirs = process.argv.slice(2);
  let found = 0;
  for (const dir of dirs.length > 0 ? dirs : ["shared/engine"]) {
    const cycles = findCycles(dir);
    found += cycles.length;
    for (const { cycle, knot } of cycles) {
      console.error(`import cycle: ${[...cycle, cycle[0]].join(" > ")}`);
      if (knot.length > cycle.length)
        console.error(`  in a knot of ${knot.length} modules: ${knot.join(", ")}`);
    }
    if (cycles.length === 0) console.log(`${dir}: no import cycle`);
  }
  if (found > 0) {
    console.error(
      `${found} import cycle(s): a module must import only modules below it (see shared/engine/contracts.ts)`,
    );
    process.exitCode = 1;
  }
}
