/**
 * One execution: its DAG laid out once and coloured by each node's state, polled every second while
 * it runs; a node's panel (definition, input, its dependencies' outputs, output, error, attempt,
 * timings, history); the history timeline; and the actions its state allows: cancel, trigger,
 * redrive, run again with the same input.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import {
  call,
  type DeadLetter,
  dependencyIds,
  displayState,
  type ExecutionDescription,
  type ExecutionView,
  everyPage,
  type NodeView,
  type WorkflowResponse,
} from "../api.js";
import { ErrorNote, Fields, JsonBlock, Loading, StatusBadge } from "../components/common.js";
import { CostPanel } from "../components/cost.js";
import { definitionOf, layoutOf } from "../definitions.js";
import {
  between,
  compactJson,
  errorLine,
  formatClock,
  formatDuration,
  formatTime,
  TERMINAL_EXECUTION,
} from "../format.js";
import { GraphView } from "../graph/GraphView.js";
import type { Layout } from "../graph/layout.js";
import { type HistoryEvent, HistoryFeed } from "../history.js";
import { href, navigate } from "../router.js";
import { NodeDefinition } from "./Workflows.js";

const POLL_MS = 1000;
/** After the execution ends, its last running nodes may take a moment to end: keep looking a while. */
const SETTLE_MS = 15_000;
const TIMELINE_SHOWN = 200;

/** One instance per execution id (the app keys it so): its state never leaks into another's page. */
export function ExecutionPage({ id, node }: { id: string; node?: string | undefined }) {
  const [view, setView] = useState<ExecutionDescription>();
  const [error, setError] = useState<unknown>();
  const [workflow, setWorkflow] = useState<WorkflowResponse>();
  const [layout, setLayout] = useState<Layout>();
  const [events, setEvents] = useState<HistoryEvent[]>([]);
  const [generation, setGeneration] = useState(0);
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<unknown>();
  const [note, setNote] = useState<string>();
  const feed = useRef<HistoryFeed>(new HistoryFeed(id));

  // The execution, polled while it (or one of its nodes) is still going.
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let settleUntil: number | undefined;
    const tick = async () => {
      try {
        const current = await call("describeExecution", { id });
        if (!live) return;
        setView(current);
        setError(undefined);
        feed.current
          .drain()
          .then((added) => live && added && setEvents([...feed.current.events]))
          .catch(() => undefined);
        const finished = TERMINAL_EXECUTION.has(current.status);
        if (finished) settleUntil ??= Date.now() + SETTLE_MS;
        const moving = current.nodes.some((n) => n.status === "RUNNING" || n.status === "QUEUED");
        // A node told to stop ends at its next heartbeat (or its lease's end): looked at until then,
        // so its STOPPING turns into CANCELLED on the page.
        const stopping = current.nodes.some((n) => displayState(n) === "STOPPING");
        if (!finished || stopping || (moving && Date.now() < (settleUntil ?? 0)))
          timer = setTimeout(tick, POLL_MS);
      } catch (failure) {
        if (!live) return;
        setError(failure);
        timer = setTimeout(tick, POLL_MS * 3);
      }
    };
    void tick();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [id, generation]);

  // Its definition and layout: once per workflow version.
  const workflowKey = view === undefined ? undefined : `${view.workflow}@${view.version}`;
  useEffect(() => {
    if (view === undefined) return;
    let live = true;
    (async () => {
      const found = await definitionOf(view.workflow, view.version);
      if (!live) return;
      setWorkflow(found);
      const laidOut = await layoutOf(found);
      if (live) setLayout(laidOut);
    })().catch((failure: unknown) => live && setError(failure));
    return () => {
      live = false;
    };
  }, [workflowKey]);

  const select = (nodeId: string | undefined) =>
    navigate({ page: "execution", id, ...(nodeId === undefined ? {} : { node: nodeId }) }, { replace: true });

  const act = async (what: () => Promise<string | undefined>) => {
    setBusy(true);
    setActionError(undefined);
    setNote(undefined);
    try {
      const message = await what();
      if (message !== undefined) setNote(message);
      setGeneration((g) => g + 1);
    } catch (failure) {
      setActionError(failure);
    } finally {
      setBusy(false);
    }
  };

  const cancel = () =>
    act(async () => {
      const ref = await call(
        "cancelExecution",
        { id },
        { body: { reason: "cancelled from the web console" } },
      );
      return `cancel requested: ${ref.status}`;
    });
  const trigger = () =>
    act(async () => {
      const ref = await call("triggerExecution", { id }, { body: {} });
      return `triggered: ${ref.status}`;
    });
  const redrive = () =>
    act(async () => {
      const mine: DeadLetter[] = (
        await everyPage(async (next) => {
          const page = await call("listDeadLetters", {}, { query: { limit: 200, next } });
          return { items: page.deadLetters, next: page.next };
        })
      ).filter((letter) => letter.executionId === id);
      if (mine.length === 0) return "this execution has no dead letters to redrive";
      const result = await call("redrive", {}, { body: { messageIds: mine.map((letter) => letter.id) } });
      return `redriven ${result.redriven.length} dead letter(s)${
        result.skipped.length > 0
          ? `, skipped ${result.skipped.map((s) => `${s.id}: ${s.reason}`).join("; ")}`
          : ""
      }`;
    });
  const runAgain = async () => {
    if (view === undefined) return;
    setBusy(true);
    setActionError(undefined);
    try {
      const ref = await call(
        "startExecution",
        {},
        {
          body: {
            workflow: view.workflow,
            version: view.version,
            ...("input" in view ? { input: view.input } : {}),
          },
        },
      );
      navigate({ page: "execution", id: ref.executionId });
    } catch (failure) {
      setActionError(failure);
    } finally {
      setBusy(false);
    }
  };

  if (view === undefined) {
    return (
      <section>
        <p class="crumbs">
          <a href={href({ page: "executions" })}>Executions</a> /
        </p>
        <h1 class="mono">{id}</h1>
        <ErrorNote error={error} />
        {error === undefined && <Loading what="the execution" />}
      </section>
    );
  }

  const selectedView = node === undefined ? undefined : view.nodes.find((n) => n.id === node);
  const inputInline = "input" in view;
  return (
    <section aria-labelledby="execution-title">
      <header class="page-header">
        <p class="crumbs">
          <a href={href({ page: "executions" })}>Executions</a> /{" "}
          <a href={href({ page: "executions", workflow: view.workflow })}>{view.workflow}</a> /
        </p>
        <h1 id="execution-title" class="mono">
          {view.executionId}
        </h1>
        <span class="badge big" data-state={view.status} data-testid="execution-status">
          {view.status}
        </span>
        <div class="actions" role="toolbar" aria-label="execution actions">
          {(view.status === "RUNNING" || view.status === "PENDING") && (
            <button type="button" class="danger" disabled={busy} onClick={() => void cancel()}>
              Cancel
            </button>
          )}
          {view.status === "PENDING" && (
            <button type="button" class="primary" disabled={busy} onClick={() => void trigger()}>
              Trigger
            </button>
          )}
          {view.status === "FAILED" && (
            <button type="button" class="primary" disabled={busy} onClick={() => void redrive()}>
              Redrive
            </button>
          )}
          <button
            type="button"
            disabled={busy || !inputInline}
            title={inputInline ? "" : "the input is too large to send again from here"}
            onClick={() => void runAgain()}
          >
            Run again
          </button>
        </div>
      </header>
      <ErrorNote error={error} />
      <ErrorNote error={actionError} />
      {note && (
        <p class="note" role="status" data-testid="action-note">
          {note}
        </p>
      )}
      <Fields
        rows={[
          [
            "Workflow",
            <a key="wf" href={href({ page: "workflow", name: view.workflow, version: view.version })}>
              {view.workflow} v{view.version}
            </a>,
          ],
          ["Created", formatTime(view.createdAt)],
          view.startedAt !== undefined && ["Started", formatTime(view.startedAt)],
          view.finishedAt !== undefined && ["Finished", formatTime(view.finishedAt)],
          view.startedAt !== undefined && [
            "Duration",
            formatDuration(between(view.startedAt, view.finishedAt)),
          ],
          ["Nodes", <NodeCounts key="counts" nodes={view.nodes} />],
          view.parent !== undefined && [
            "Parent",
            <a
              key="parent"
              href={href({ page: "execution", id: view.parent.executionId, node: view.parent.nodeId })}
            >
              {view.parent.executionId} / {view.parent.nodeId}
            </a>,
          ],
          view.error !== undefined && ["Error", <span class="error-text">{errorLine(view.error)}</span>],
          layout !== undefined && [
            "Layout",
            `${layout.nodes.length} nodes laid out in ${layout.ms} ms${layout.cached ? " (an earlier visit)" : ""}`,
          ],
        ]}
      />
      <div class="split">
        <div class="split-main">
          {layout === undefined && <Loading what="the graph" />}
          {layout !== undefined && (
            <GraphView
              layout={layout}
              states={view.nodes}
              selected={node}
              onSelect={(nodeId) => select(nodeId)}
            />
          )}
        </div>
        {selectedView && (
          <NodePanel
            view={view}
            node={selectedView}
            workflow={workflow}
            events={events}
            onClose={() => select(undefined)}
            onSelect={select}
          />
        )}
      </div>
      <details class="card" open={!selectedView}>
        <summary>{view.vars === undefined ? "Input and output" : "Input, output and variables"}</summary>
        <h3>Input</h3>
        {inputInline ? (
          <JsonBlock value={view.input} label="execution input" />
        ) : (
          <Reference value={view.inputRef} />
        )}
        {view.status === "SUCCEEDED" && (
          <>
            <h3>Output</h3>
            {"output" in view ? (
              <JsonBlock value={view.output} label="execution output" />
            ) : (
              <Reference value={view.outputRef} />
            )}
          </>
        )}
        {view.vars !== undefined && (
          <>
            <h3>Variables</h3>
            <JsonBlock value={view.vars} label="execution variables" />
          </>
        )}
        {view.onFailure && (
          <>
            <h3>onFailure handler</h3>
            <p>
              <StatusBadge status={view.onFailure.status} /> {view.onFailure.type}, attempt{" "}
              {view.onFailure.attempt}
            </p>
          </>
        )}
      </details>
      <CostPanel cost={view.cost} />
      <Timeline events={events} start={view.startedAt ?? view.createdAt} onSelect={select} />
    </section>
  );
}

function NodeCounts({ nodes }: { nodes: readonly NodeView[] }) {
  const counts = new Map<string, number>();
  for (const n of nodes) counts.set(displayState(n), (counts.get(displayState(n)) ?? 0) + 1);
  return (
    <span class="counts">
      {[...counts.entries()].map(([status, count]) => (
        <span key={status} class="count" data-state={status}>
          {count} {status.toLowerCase()}
        </span>
      ))}
    </span>
  );
}

type Ref = NonNullable<ExecutionView["inputRef"]>;

/** A value the API left out of the view (too large): its size and hash, a download link, or its parts. */
function Reference({ value }: { value: Ref | undefined }) {
  if (value === undefined) return <p class="muted">—</p>;
  if ("parts" in value) {
    return (
      <div>
        <p>{value.bytes.toLocaleString()} bytes, in parts:</p>
        <ul class="plain">
          {Object.entries(value.parts).map(([key, part]) => (
            <li key={key}>
              <strong>{key}</strong>:{" "}
              {"value" in part ? <code>{compactJson(part.value)}</code> : <Reference value={part.ref} />}
            </li>
          ))}
        </ul>
      </div>
    );
  }
  return (
    <p>
      {value.bytes.toLocaleString()} bytes, sha256 <code>{value.sha256.slice(0, 12)}…</code>
      {value.url !== undefined && (
        <>
          {" "}
          <a href={value.url} target="_blank" rel="noreferrer">
            download
          </a>
        </>
      )}
    </p>
  );
}

function NodePanel(props: {
  view: ExecutionView;
  node: NodeView;
  workflow: WorkflowResponse | undefined;
  events: HistoryEvent[];
  onClose: () => void;
  onSelect: (id: string) => void;
}) {
  const { view, node, workflow, events } = props;
  const definition = workflow?.definition.nodes.find((n) => n.id === node.id);
  const deps = definition ? dependencyIds(definition) : [];
  const byId = useMemo(() => new Map(view.nodes.map((n) => [n.id, n])), [view]);
  const mine = events.filter((event) => event.nodeId === node.id);
  return (
    <aside class="panel" aria-label={`node ${node.id}`} data-testid="node-panel">
      <header class="panel-header">
        <h2>{node.id}</h2>
        <StatusBadge status={displayState(node)} />
        <button type="button" class="close" aria-label="Close" onClick={props.onClose}>
          ×
        </button>
      </header>
      <Fields
        rows={[
          ["Type", node.type],
          ["Attempt", node.attempt],
          node.startedAt !== undefined && ["Started", formatTime(node.startedAt)],
          node.finishedAt !== undefined && ["Finished", formatTime(node.finishedAt)],
          node.startedAt !== undefined && [
            "Duration",
            formatDuration(between(node.startedAt, node.finishedAt)),
          ],
          node.workerId !== undefined && ["Worker", node.workerId],
          node.items !== undefined && [
            "Items",
            `${node.items.completed} completed, ${node.items.failed} failed, ${node.items.running} running of ${node.items.total}`,
          ],
          node.childExecutionId !== undefined && [
            "Child execution",
            <a key="child" href={href({ page: "execution", id: node.childExecutionId })}>
              {node.childExecutionId}
            </a>,
          ],
          node.waitingFor !== undefined && [
            "Waiting for",
            <span key="waiting" data-testid="waiting-for">
              a {node.waitingFor.reason} slot
              {node.waitingFor.key === "" ? (
                ""
              ) : (
                <>
                  {" "}
                  (key <code>{node.waitingFor.key}</code>)
                </>
              )}
            </span>,
          ],
          node.callbackToken !== undefined && [
            "Callback token",
            <code key="token">{node.callbackToken}</code>,
          ],
        ]}
      />
      {node.error !== undefined && (
        <>
          <h3>Error</h3>
          <JsonBlock value={node.error} label="node error" />
        </>
      )}
      <h3>Output</h3>
      {node.outputRef !== undefined ? (
        <Reference value={node.outputRef} />
      ) : node.status === "COMPLETED" ? (
        <div data-testid="node-output">
          <JsonBlock value={node.output} label="node output" />
        </div>
      ) : (
        <p class="muted">none yet</p>
      )}
      <h3>Input</h3>
      {"input" in view ? (
        <JsonBlock value={view.input} label="node input" />
      ) : (
        <Reference value={view.inputRef} />
      )}
      {deps.length > 0 && (
        <>
          <h3>Dependencies' outputs</h3>
          {deps.map((dep) => {
            const depView = byId.get(dep);
            return (
              <div key={dep} class="dep">
                <p>
                  <button type="button" class="link" onClick={() => props.onSelect(dep)}>
                    {dep}
                  </button>{" "}
                  {depView && <StatusBadge status={depView.status} />}
                </p>
                {depView?.status === "COMPLETED" && depView.outputRef === undefined && (
                  <JsonBlock value={depView.output} label={`output of ${dep}`} />
                )}
                {depView?.outputRef !== undefined && <Reference value={depView.outputRef} />}
              </div>
            );
          })}
        </>
      )}
      {definition && (
        <>
          <h3>Definition</h3>
          <NodeDefinition node={definition} />
        </>
      )}
      <h3>History</h3>
      {mine.length === 0 ? (
        <p class="muted">no events yet</p>
      ) : (
        <ol class="events" aria-label={`history of ${node.id}`}>
          {mine.map((event, index) => (
            <li key={index}>
              <time title={event.at}>{formatClock(event.at)}</time> <strong>{event.type}</strong>
              {event.attempt !== undefined && <span class="muted"> attempt {event.attempt}</span>}
              {event.detail !== undefined && Object.keys(event.detail).length > 0 && (
                <code class="detail">{compactJson(event.detail)}</code>
              )}
            </li>
          ))}
        </ol>
      )}
    </aside>
  );
}

function Timeline({
  events,
  start,
  onSelect,
}: {
  events: HistoryEvent[];
  start: string;
  onSelect: (id: string) => void;
}) {
  const [all, setAll] = useState(false);
  const origin = Date.parse(start);
  const shown = all ? events : events.slice(-TIMELINE_SHOWN);
  return (
    <section class="card" aria-labelledby="timeline-title">
      <h2 id="timeline-title">History ({events.length} events)</h2>
      {events.length > shown.length && (
        <button type="button" class="link" onClick={() => setAll(true)}>
          Show all {events.length} events (the last {TIMELINE_SHOWN} are shown)
        </button>
      )}
      <table class="table compact" data-testid="timeline">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">+</th>
            <th scope="col">Event</th>
            <th scope="col">Node</th>
            <th scope="col">Attempt</th>
            <th scope="col">Detail</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((event, index) => (
            <tr key={index} data-type={event.type}>
              <td class="nowrap" title={event.at}>
                {formatClock(event.at)}
              </td>
              <td class="muted nowrap">{formatDuration(Date.parse(event.at) - origin)}</td>
              <td>{event.type}</td>
              <td>
                {event.nodeId !== undefined && (
                  <button type="button" class="link" onClick={() => onSelect(event.nodeId as string)}>
                    {event.nodeId}
                  </button>
                )}
              </td>
              <td>{event.attempt ?? ""}</td>
              <td>
                {event.detail !== undefined && Object.keys(event.detail).length > 0 && (
                  <code class="detail">{compactJson(event.detail)}</code>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
