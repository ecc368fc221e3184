/** Human-readable rendering: colors (only on a TTY, never with NO_COLOR), durations, tables, lines. */

import { dependencyLabel } from "../shared/domain/edges.js";
import { stringifyExact } from "../shared/domain/exact-numbers.js";
import { EXECUTION_STATUSES, NODE_STATUSES } from "../shared/domain/records.js";
import { isTerminalExecution, isTerminalNode } from "../shared/domain/states.js";
import { displayState } from "../shared/engine/views.js";
import type {
  DeadLetter,
  ExecutionListItem,
  ExecutionView,
  HistoryEventView,
  NodeView,
  PayloadReference,
  WorkerView,
  WorkflowListItem,
  WorkflowResponse,
} from "./client.js";

export interface Style {
  color: boolean;
}

/** Colors only when the stream is a terminal and NO_COLOR is unset or empty (https://no-color.org). */
export function styleFor(stream: { isTTY?: boolean }, env: Record<string, string | undefined>): Style {
  return { color: stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "") };
}

const CODES = {
  red: 31,
  green: 32,
  yellow: 33,
  blue: 34,
  magenta: 35,
  cyan: 36,
  gray: 90,
  bold: 1,
  dim: 2,
} as const;

export type ColorName = keyof typeof CODES;

export function paint(style: Style, color: ColorName, text: string): string {
  return style.color ? `\x1b[${CODES[color]}m${text}\x1b[0m` : text;
}

const STATUS_COLORS: Record<string, ColorName> = {
  PENDING: "gray",
  QUEUED: "yellow",
  RUNNING: "cyan",
  STOPPING: "magenta",
  COMPLETED: "green",
  SUCCEEDED: "green",
  FAILED: "red",
  CANCELLED: "magenta",
  SKIPPED: "gray",
  // A worker's health (GET /workers).
  healthy: "green",
  stale: "yellow",
  dead: "red",
};

const STATUS_SYMBOLS: Record<string, string> = {
  PENDING: "·",
  QUEUED: "○",
  RUNNING: "●",
  STOPPING: "◐",
  COMPLETED: "✔",
  SUCCEEDED: "✔",
  FAILED: "✖",
  CANCELLED: "⊘",
  SKIPPED: "↷",
};

export function statusText(style: Style, status: string, width = 0): string {
  return paint(style, STATUS_COLORS[status] ?? "bold", status.padEnd(width));
}

export function statusSymbol(style: Style, status: string): string {
  return paint(style, STATUS_COLORS[status] ?? "bold", STATUS_SYMBOLS[status] ?? "?");
}

export const TERMINAL_EXECUTION = new Set<string>(EXECUTION_STATUSES.filter(isTerminalExecution));
export const TERMINAL_NODE = new Set<string>(NODE_STATUSES.filter(isTerminalNode));

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const totalSeconds = Math.floor(ms / 1000);
  if (ms < 3_600_000)
    return `${Math.floor(totalSeconds / 60)}m${String(totalSeconds % 60).padStart(2, "0")}s`;
  const minutes = Math.floor(totalSeconds / 60);
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}

/** Time between two ISO instants; `end` absent means "until now" (for running work). */
export function elapsed(start: string | undefined, end: string | undefined, now: number): number | undefined {
  if (start === undefined) return undefined;
  const from = Date.parse(start);
  const to = end === undefined ? now : Date.parse(end);
  return Number.isNaN(from) || Number.isNaN(to) ? undefined : Math.max(0, to - from);
}

/** Local wall-clock time, HH:MM:SS. */
export function clockTime(at: number | string): string {
  const date = new Date(at);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

export function oneLine(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function errorText(error: { name?: string; message?: string } | undefined): string {
  if (!error) return "";
  return oneLine(error.name ? `${error.name}: ${error.message ?? ""}` : (error.message ?? ""));
}

/** Dependencies of each node, from the workflow definition (when it could be fetched). */
export type DependencyMap = Map<string, { dependsOn: string[]; fanIn?: string }>;

export function dependencyMap(workflow: WorkflowResponse | undefined): DependencyMap | undefined {
  if (!workflow) return undefined;
  const map: DependencyMap = new Map();
  for (const node of workflow.definition.nodes) {
    map.set(node.id, {
      dependsOn: (node.dependsOn ?? []).map(dependencyLabel),
      ...(node.fanIn === undefined ? {} : { fanIn: node.fanIn }),
    });
  }
  return map;
}

/** One table row per node: symbol, id, status, attempt, duration, dependencies or error. */
export function nodeRows(
  style: Style,
  view: ExecutionView,
  now: number,
  deps: DependencyMap | undefined,
): string[] {
  const idWidth = Math.min(40, Math.max(4, ...view.nodes.map((n) => n.id.length)));
  return view.nodes.map((node) => nodeRow(style, node, idWidth, now, deps));
}

function nodeRow(
  style: Style,
  node: NodeView,
  idWidth: number,
  now: number,
  deps: DependencyMap | undefined,
) {
  const duration = elapsed(node.startedAt, node.finishedAt, now);
  const state = displayState(node);
  const parts = [
    statusSymbol(style, state),
    node.id.padEnd(idWidth),
    statusText(style, state, 9),
    node.attempt > 0 ? `attempt ${node.attempt}`.padEnd(10) : "".padEnd(10),
    (duration === undefined ? "" : formatDuration(duration)).padEnd(7),
  ];
  let tail = "";
  if (node.error) tail = paint(style, "red", errorText(node.error));
  else if (node.waitingFor)
    // Queued behind a concurrency limit (docs/flow-control.md): what it waits for says why it waits.
    tail = paint(
      style,
      "yellow",
      `waiting for a ${node.waitingFor.reason} slot${node.waitingFor.key === "" ? "" : ` (key ${node.waitingFor.key})`}`,
    );
  else {
    const dep = deps?.get(node.id);
    if (dep && dep.dependsOn.length > 0) {
      const fanIn = dep.fanIn && dep.fanIn !== "all" ? ` (${dep.fanIn})` : "";
      tail = paint(style, "gray", `⇐ ${dep.dependsOn.join(", ")}${fanIn}`);
    }
  }
  return `${parts.join(" ")} ${tail}`.trimEnd();
}

export function executionHeader(style: Style, view: ExecutionView, now: number): string {
  const duration = elapsed(view.startedAt, view.finishedAt, now);
  const counts = new Map<string, number>();
  for (const node of view.nodes) counts.set(displayState(node), (counts.get(displayState(node)) ?? 0) + 1);
  const summary = [...counts].map(([status, n]) => `${n} ${status.toLowerCase()}`).join(", ");
  return [
    paint(style, "bold", `execution ${view.executionId}`),
    `${view.workflow} v${view.version}`,
    statusText(style, view.status),
    duration === undefined ? "" : formatDuration(duration),
    paint(style, "gray", summary),
  ]
    .filter((part) => part !== "")
    .join("  ");
}

export function prettyJson(value: unknown): string {
  // Exact numbers (exact-numbers.ts) as their digits.
  return stringifyExact(value, undefined, 2) as string;
}

/** A size for people: "512 bytes", "4.5 KiB", "8 MiB", "8.3 MiB". */
export function formatSize(bytes: number): string {
  const [unit, size] =
    bytes >= 1024 * 1024
      ? ["MiB", bytes / (1024 * 1024)]
      : bytes >= 1024
        ? ["KiB", bytes / 1024]
        : ["", bytes];
  if (unit === "") return `${bytes} byte${bytes === 1 ? "" : "s"}`;
  return `${Number.isInteger(size) ? size : size.toFixed(1)} ${unit}`;
}

/**
 * A value the API left out of its answer (too large to inline), in one line: its size and hash, and
 * where to download it when the API gave a URL. The members of a merge's output (`parts`) follow on
 * lines of their own, indented under it.
 */
export function referenceLines(style: Style, ref: PayloadReference): string[] {
  if (!("parts" in ref)) {
    const hash = paint(style, "gray", `(sha256 ${ref.sha256.slice(0, 12)}…)`);
    return [`${formatSize(ref.bytes)} ${hash}${ref.url === undefined ? "" : `, download: ${ref.url}`}`];
  }
  const entries = Object.entries(ref.parts);
  const lines = [`${formatSize(ref.bytes)} in ${entries.length} part${entries.length === 1 ? "" : "s"}:`];
  for (const [key, part] of entries) {
    const [first = "", ...rest] =
      "ref" in part ? referenceLines(style, part.ref) : [oneLine(stringifyExact(part.value) ?? "null", 120)];
    lines.push(`  ${key}: ${first}`, ...rest.map((line) => `  ${line}`));
  }
  return lines;
}

/** `label: <reference>`, its parts (if any) indented by `indent` under it. */
function labelledReference(style: Style, label: string, ref: PayloadReference, indent = ""): string[] {
  const [first = "", ...rest] = referenceLines(style, ref);
  return [
    `${indent}${paint(style, "bold", `${label}:`)} ${first}`,
    ...rest.map((line) => `${indent}${line}`),
  ];
}

/**
 * Largest output (as JSON text) printed in full for a person; a larger one (the local runtime, and
 * `status --resolve`, inline values of up to 10 MiB) is summed up by its size, `--json` has it all.
 */
export const MAX_SHOWN_OUTPUT_CHARS = 64 * 1024;

/** The end of an execution: its output (or a reference to it) when it succeeded, its error otherwise. */
export function resultText(style: Style, view: ExecutionView): string {
  if (view.status === "SUCCEEDED") {
    if (view.output === undefined && view.outputRef !== undefined)
      return labelledReference(style, "output", view.outputRef).join("\n");
    const text = stringifyExact(view.output ?? null) ?? "null";
    if (text.length > MAX_SHOWN_OUTPUT_CHARS) {
      return `${paint(style, "bold", "output:")} ${formatSize(Buffer.byteLength(text, "utf8"))}, too large to show here (weft status ${view.executionId} --json prints it)`;
    }
    return `${paint(style, "bold", "output:")}\n${prettyJson(view.output ?? null)}`;
  }
  if (view.error) return `${paint(style, "bold", "error:")} ${paint(style, "red", errorText(view.error))}`;
  return "";
}

/** `weft status`: header, node table, output or error. */
export function renderExecution(
  style: Style,
  view: ExecutionView,
  now: number,
  deps: DependencyMap | undefined,
): string {
  const lines = [
    executionHeader(style, view, now),
    `  created ${view.createdAt}${view.startedAt ? `  started ${view.startedAt}` : ""}${
      view.finishedAt ? `  finished ${view.finishedAt}` : ""
    }`,
  ];
  if (view.inputRef !== undefined) lines.push(...labelledReference(style, "input", view.inputRef, "  "));
  const rows = nodeRows(style, view, now, deps);
  view.nodes.forEach((node, index) => {
    lines.push(`  ${rows[index] ?? ""}`);
    // A node's output is shown only when it is a reference (large); `--json` has every output.
    if (node.outputRef !== undefined)
      lines.push(...labelledReference(style, "output", node.outputRef, "      "));
  });
  // Its variables (`assign`, `vars` nodes), when its workflow writes any.
  if (view.vars !== undefined && Object.keys(view.vars).length > 0)
    lines.push(`${paint(style, "bold", "vars:")}\n${prettyJson(view.vars)}`);
  const result = resultText(style, view);
  if (result) lines.push(result);
  return lines.join("\n");
}

export function renderEvent(style: Style, event: HistoryEventView): string {
  const parts = [
    paint(style, "gray", event.at),
    event.type.padEnd(22),
    event.nodeId ?? "",
    event.attempt === undefined ? "" : `attempt ${event.attempt}`,
    event.detail === undefined || Object.keys(event.detail).length === 0
      ? ""
      : paint(style, "gray", oneLine(stringifyExact(event.detail) ?? "", 160)),
  ];
  return parts
    .filter((part) => part !== "")
    .join("  ")
    .trimEnd();
}

export function renderExecutionList(style: Style, items: ExecutionListItem[], now: number): string {
  if (items.length === 0) return "no executions";
  const workflowWidth = Math.max(8, ...items.map((item) => `${item.workflow} v${item.version}`.length));
  const header = paint(
    style,
    "bold",
    `${"EXECUTION".padEnd(36)}  ${"WORKFLOW".padEnd(workflowWidth)}  ${"STATUS".padEnd(9)}  ${"CREATED".padEnd(24)}  DURATION`,
  );
  const rows = items.map((item) => {
    const duration = elapsed(item.startedAt, item.finishedAt, now);
    return [
      item.executionId.padEnd(36),
      `${item.workflow} v${item.version}`.padEnd(workflowWidth),
      statusText(style, item.status, 9),
      item.createdAt.padEnd(24),
      duration === undefined ? "" : formatDuration(duration),
    ]
      .join("  ")
      .trimEnd();
  });
  return [header, ...rows].join("\n");
}

export function renderDeadLetters(style: Style, items: DeadLetter[]): string {
  if (items.length === 0) return "the dead-letter queue is empty";
  return items
    .map((item) =>
      [
        paint(style, "bold", item.id),
        `  execution ${item.executionId}  node ${item.nodeId}  attempt ${item.attempt}${
          item.receiveCount === undefined ? "" : `  received ${item.receiveCount}×`
        }`,
        `  ${item.at}  ${item.reason}`,
        `  ${paint(style, "red", errorText(item.error))}`,
      ].join("\n"),
    )
    .join("\n");
}

/** `weft workers`: one row per worker — id, pool, health, running tasks of its most, last heartbeat. */
export function renderWorkers(style: Style, items: WorkerView[], now: number): string {
  if (items.length === 0) return "no workers registered";
  const idWidth = Math.max(6, ...items.map((w) => w.workerId.length));
  const poolWidth = Math.max(4, ...items.map((w) => w.pool.length));
  const header = paint(
    style,
    "bold",
    `${"WORKER".padEnd(idWidth)}  ${"POOL".padEnd(poolWidth)}  ${"STATUS".padEnd(7)}  ${"TASKS".padEnd(9)}  LAST HEARTBEAT`,
  );
  const rows = items.map((worker) => {
    const ago = elapsed(worker.lastHeartbeatAt, undefined, now);
    return [
      worker.workerId.padEnd(idWidth),
      worker.pool.padEnd(poolWidth),
      statusText(style, worker.status, 7),
      `${worker.taskCount}/${worker.maxParallel}`.padEnd(9),
      `${worker.lastHeartbeatAt}${ago === undefined ? "" : paint(style, "gray", ` (${formatDuration(ago)} ago)`)}`,
    ].join("  ");
  });
  return [header, ...rows].join("\n");
}

/** `weft workflows`: one row per workflow — name, latest version, when created, description. */
export function renderWorkflows(style: Style, items: WorkflowListItem[]): string {
  if (items.length === 0) return "no workflows registered";
  const nameWidth = Math.max(4, ...items.map((w) => w.name.length));
  const header = paint(
    style,
    "bold",
    `${"NAME".padEnd(nameWidth)}  ${"LATEST".padEnd(6)}  ${"CREATED".padEnd(24)}  DESCRIPTION`,
  );
  const rows = items.map((workflow) =>
    [
      workflow.name.padEnd(nameWidth),
      `v${workflow.latestVersion}`.padEnd(6),
      workflow.createdAt.padEnd(24),
      paint(style, "gray", oneLine(workflow.description ?? "", 60)),
    ]
      .join("  ")
      .trimEnd(),
  );
  return [header, ...rows].join("\n");
}

/** A JSON value on one line, cut at `max` characters. */
function compact(value: unknown, max = 160): string {
  return oneLine(stringifyExact(value) ?? "undefined", max);
}

/**
 * `weft show`: a definition, readable — the workflow's settings, then each node with what it
 * runs, what it waits for (dependsOn, fanIn), when it runs, and how (retry, timeouts, placement).
 */
export function renderDefinition(style: Style, workflow: WorkflowResponse): string {
  const definition = workflow.definition;
  const lines = [
    `${paint(style, "bold", `workflow ${workflow.name}`)}  version ${workflow.version}  registered ${workflow.createdAt}  ${paint(style, "gray", `hash ${workflow.definitionHash.slice(0, 12)}`)}`,
  ];
  if (definition.description !== undefined) lines.push(definition.description);
  const setting = (name: string, value: string) => `  ${paint(style, "gray", name.padEnd(12))}${value}`;
  const settings = [
    definition.defaults !== undefined && setting("defaults", compact(definition.defaults)),
    definition.timeoutSeconds !== undefined &&
      setting("timeout", `${definition.timeoutSeconds} s (the whole execution)`),
    definition.events !== undefined && setting("events", compact(definition.events)),
    definition.rateLimit !== undefined && setting("rateLimit", compact(definition.rateLimit)),
    definition.onFailure !== undefined &&
      setting(
        "onFailure",
        `${definition.onFailure.type}${definition.onFailure.params === undefined ? "" : ` ${compact(definition.onFailure.params)}`}`,
      ),
  ].filter((line): line is string => typeof line === "string");
  lines.push(...settings);
  const entries = definition.nodes
    .filter((node) => (node.dependsOn ?? []).length === 0)
    .map((node) => node.id);
  lines.push("", `${definition.nodes.length} node(s), entry: ${entries.join(", ")}`);
  for (const node of definition.nodes) {
    lines.push("", `${paint(style, "bold", node.id)}  ${paint(style, "cyan", node.type)}`);
    const field = (name: string, value: string) =>
      lines.push(`  ${paint(style, "gray", name.padEnd(12))}${value}`);
    if (node.description !== undefined) field("description", oneLine(node.description, 160));
    if ((node.dependsOn ?? []).length > 0) {
      field(
        "dependsOn",
        `${(node.dependsOn ?? []).map(dependencyLabel).join(", ")}${node.fanIn === undefined ? "" : `   fanIn ${node.fanIn}`}`,
      );
    }
    if (node.when !== undefined) field("when", node.when);
    if (node.params !== undefined) field("params", compact(node.params));
    if (node.retry !== undefined) field("retry", compact(node.retry));
    if (node.timeoutSeconds !== undefined) field("timeout", `${node.timeoutSeconds} s`);
    if (node.heartbeatSeconds !== undefined) field("heartbeat", `${node.heartbeatSeconds} s`);
    if (node.runsOn !== undefined) field("runsOn", compact(node.runsOn));
    if (node.concurrency !== undefined) field("concurrency", compact(node.concurrency));
    if (node.onError !== undefined) field("onError", node.onError);
  }
  return lines.join("\n");
}
