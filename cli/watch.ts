/**
 * `weft watch`: follows an execution until it ends by polling GET /executions/{id}, or until told to
 * stop (Ctrl-C: the execution goes on; the command says so).
 *
 * - tty: the node table redrawn in place (ANSI cursor movement), with state, attempt, duration and
 *   dependencies or error, trimmed to the terminal's size.
 * - plain: one line per observed change, e.g. `12:00:01 extract-a RUNNING attempt 1` (a state that
 *   lasted less than one poll interval may not be seen).
 * - quiet: nothing until the end (for --json).
 */
import { displayState } from "../shared/engine/views.js";
import type { ExecutionView, NodeView, WeftClient } from "./client.js";
import { UnreachableError } from "./errors.js";
import {
  clockTime,
  type DependencyMap,
  dependencyMap,
  elapsed,
  errorText,
  executionHeader,
  formatDuration,
  nodeRows,
  paint,
  resultText,
  type Style,
  statusText,
  TERMINAL_EXECUTION,
  TERMINAL_NODE,
} from "./render.js";

export type WatchMode = "tty" | "plain" | "quiet";

export interface Output {
  write(text: string): unknown;
  columns?: number;
  rows?: number;
}

export interface WatchOptions {
  client: WeftClient;
  executionId: string;
  intervalMs: number;
  mode: WatchMode;
  out: Output;
  style: Style;
  /** Print the output or error at the end (not in quiet mode). Default true. */
  showResult?: boolean;
  now?: () => number;
  /** Stops watching (Ctrl-C): the watch ends at once, the execution goes on. */
  signal?: AbortSignal;
}

/** The execution ended (`view`, as it ended), or the watch was stopped first (`last` seen, if any). */
export type WatchOutcome =
  | { ended: true; view: ExecutionView }
  | { ended: false; last: ExecutionView | undefined };

/** Polls that may fail to reach the API in a row before watch gives up. */
const MAX_UNREACHABLE_POLLS = 5;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const STOPPED = Symbol("stopped");

/** `work`, or STOPPED as soon as `signal` aborts (the work itself is left to finish unobserved). */
function unlessStopped<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | typeof STOPPED> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.resolve(STOPPED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(STOPPED);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

export async function watchExecution(options: WatchOptions): Promise<WatchOutcome> {
  const { client, executionId, mode, out, style, signal } = options;
  const now = options.now ?? Date.now;
  const renderer =
    mode === "tty"
      ? new TtyRenderer(out, style)
      : mode === "plain"
        ? new PlainRenderer(out, style)
        : undefined;

  let deps: DependencyMap | undefined;
  let unreachable = 0;
  let last: ExecutionView | undefined;
  try {
    for (;;) {
      let view: ExecutionView;
      try {
        // Polls need states, not values: references keep a large input or output out of each one.
        const polled = await unlessStopped(client.getExecution(executionId, { resolve: false }), signal);
        if (polled === STOPPED) return { ended: false, last };
        view = polled;
        unreachable = 0;
      } catch (error) {
        if (!(error instanceof UnreachableError) || ++unreachable >= MAX_UNREACHABLE_POLLS) throw error;
        if ((await unlessStopped(sleep(options.intervalMs), signal)) === STOPPED)
          return { ended: false, last };
        continue;
      }
      if (last === undefined && mode === "tty") {
        // The definition gives each node's dependencies; the table works without it.
        deps = dependencyMap(await client.getWorkflow(view.workflow, view.version).catch(() => undefined));
      }
      last = view;
      renderer?.update(view, now(), deps);
      if (TERMINAL_EXECUTION.has(view.status)) {
        const final = await finalView(client, view);
        renderer?.finish(final, options.showResult ?? true);
        return { ended: true, view: final };
      }
      if ((await unlessStopped(sleep(options.intervalMs), signal)) === STOPPED) return { ended: false, last };
    }
  } finally {
    renderer?.close();
  }
}

/**
 * The execution at its end as the API answers by default (the local runtime inlines every value, a
 * deployed API gives references): fetched once more only when the last poll had references. If that
 * fails, the last poll's view is as true, only less complete.
 */
async function finalView(client: WeftClient, view: ExecutionView): Promise<ExecutionView> {
  const references =
    view.inputRef !== undefined ||
    view.outputRef !== undefined ||
    view.nodes.some((node) => node.outputRef !== undefined);
  if (!references) return view;
  return client.getExecution(view.executionId).catch(() => view);
}

interface Renderer {
  update(view: ExecutionView, now: number, deps: DependencyMap | undefined): void;
  finish(view: ExecutionView, showResult: boolean): void;
  close(): void;
}

const HIDE_CURSOR = "\x1b[?25l";
const SHOW_CURSOR = "\x1b[?25h";

export class TtyRenderer implements Renderer {
  private drawnLines = 0;
  private cursorHidden = false;

  constructor(
    private readonly out: Output,
    private readonly style: Style,
  ) {}

  update(view: ExecutionView, now: number, deps: DependencyMap | undefined): void {
    const columns = Math.max(20, this.out.columns ?? 100);
    const maxRows = Math.max(3, (this.out.rows ?? 40) - 4);
    const frame = [executionHeader(this.style, view, now), ...this.visibleRows(view, now, deps, maxRows)].map(
      (line) => truncateAnsi(line, columns - 1),
    );
    let text = "";
    if (!this.cursorHidden) {
      text += HIDE_CURSOR;
      this.cursorHidden = true;
    }
    // Back to the first line of the previous frame, clear everything below, draw the new one.
    if (this.drawnLines > 0) text += `\x1b[${this.drawnLines}A\r\x1b[J`;
    text += `${frame.join("\n")}\n`;
    this.out.write(text);
    this.drawnLines = frame.length;
  }

  private visibleRows(view: ExecutionView, now: number, deps: DependencyMap | undefined, maxRows: number) {
    if (view.nodes.length <= maxRows) return nodeRows(this.style, view, now, deps).map((row) => `  ${row}`);
    // Too many to show: the active and failed ones first, in definition order, then the rest.
    const rank = (node: NodeView) =>
      node.status === "RUNNING" || node.status === "FAILED" ? 0 : node.status === "QUEUED" ? 1 : 2;
    const shown = new Set(
      view.nodes
        .map((node, index) => ({ node, index }))
        .sort((a, b) => rank(a.node) - rank(b.node) || a.index - b.index)
        .slice(0, maxRows - 1)
        .map(({ node }) => node.id),
    );
    const subset = { ...view, nodes: view.nodes.filter((node) => shown.has(node.id)) };
    const rows = nodeRows(this.style, subset, now, deps).map((row) => `  ${row}`);
    rows.push(
      paint(this.style, "gray", `  … ${view.nodes.length - subset.nodes.length} more nodes not shown`),
    );
    return rows;
  }

  finish(view: ExecutionView, showResult: boolean): void {
    this.close();
    const result = showResult ? resultText(this.style, view) : "";
    if (result) this.out.write(`${result}\n`);
  }

  close(): void {
    if (this.cursorHidden) {
      this.out.write(SHOW_CURSOR);
      this.cursorHidden = false;
    }
  }
}

export class PlainRenderer implements Renderer {
  private readonly seen = new Map<string, string>();
  private executionStatus: string | undefined;

  constructor(
    private readonly out: Output,
    private readonly style: Style,
  ) {}

  update(view: ExecutionView, now: number): void {
    const lines: Array<{ at: number; text: string }> = [];
    if (this.executionStatus === undefined) {
      this.out.write(
        `watching execution ${view.executionId} (${view.workflow} v${view.version}, ${view.nodes.length} nodes)\n`,
      );
    }
    for (const node of view.nodes) {
      const key = `${displayState(node)}/${node.attempt}`;
      const before = this.seen.get(node.id);
      this.seen.set(node.id, key);
      if (before === key || (before === undefined && node.status === "PENDING")) continue;
      const at = nodeTime(node, now);
      lines.push({ at, text: this.nodeLine(node, at, now) });
    }
    if (view.status !== this.executionStatus) {
      this.executionStatus = view.status;
      const at = Date.parse(view.finishedAt ?? view.startedAt ?? "") || now;
      const duration = TERMINAL_EXECUTION.has(view.status)
        ? elapsed(view.startedAt, view.finishedAt, now)
        : undefined;
      lines.push({
        // Execution changes come after the node changes that caused them.
        at: at + 0.5,
        text: `${clockTime(at)} [execution] ${statusText(this.style, view.status)}${
          duration === undefined ? "" : ` in ${formatDuration(duration)}`
        }`,
      });
    }
    lines.sort((a, b) => a.at - b.at);
    if (lines.length > 0) this.out.write(`${lines.map((line) => line.text).join("\n")}\n`);
  }

  private nodeLine(node: NodeView, at: number, now: number): string {
    let text = `${clockTime(at)} ${node.id} ${statusText(this.style, displayState(node))} attempt ${node.attempt}`;
    if (TERMINAL_NODE.has(node.status)) {
      const duration = elapsed(node.startedAt, node.finishedAt, now);
      if (duration !== undefined) text += ` in ${formatDuration(duration)}`;
    }
    if (node.error) text += ` — ${paint(this.style, "red", errorText(node.error))}`;
    return text;
  }

  finish(view: ExecutionView, showResult: boolean): void {
    const result = showResult ? resultText(this.style, view) : "";
    if (result) this.out.write(`${result}\n`);
  }

  close(): void {}
}

function nodeTime(node: NodeView, now: number): number {
  const iso = TERMINAL_NODE.has(node.status)
    ? node.finishedAt
    : node.status === "RUNNING"
      ? node.startedAt
      : undefined;
  const parsed = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isNaN(parsed) ? now : parsed;
}

const ESC = String.fromCharCode(27);
/** An ANSI CSI sequence (colors, cursor movement). */
const ANSI = new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, "g");
const ANSI_AT_START = new RegExp(`^${ESC}\\[[0-9;?]*[A-Za-z]`);

/** Cuts a string with ANSI color codes to `width` visible characters, ending it with "…". */
export function truncateAnsi(text: string, width: number): string {
  if (text.replace(ANSI, "").length <= width) return text;
  let visible = 0;
  let out = "";
  for (let i = 0; i < text.length && visible < width - 1; ) {
    const sequence = text[i] === ESC ? ANSI_AT_START.exec(text.slice(i)) : null;
    if (sequence) {
      out += sequence[0];
      i += sequence[0].length;
      continue;
    }
    out += text[i];
    visible += 1;
    i += 1;
  }
  return text.includes(ESC) ? `${out}…\x1b[0m` : `${out}…`;
}
