/** The workflows: their list, and one workflow's definition drawn as its DAG. */
import { useEffect, useState } from "preact/hooks";
import { parseExact } from "../../../shared/domain/exact-numbers.js";
import {
  call,
  dependencyLabel,
  type ExecutionListItem,
  type WorkflowListItem,
  type WorkflowResponse,
} from "../api.js";
import { ErrorNote, Fields, JsonBlock, Loading, StatusBadge } from "../components/common.js";
import { definitionOf, layoutOf } from "../definitions.js";
import { compactJson, formatTime } from "../format.js";
import { GraphView } from "../graph/GraphView.js";
import type { Layout } from "../graph/layout.js";
import { href, navigate } from "../router.js";

export function WorkflowsPage() {
  const [items, setItems] = useState<WorkflowListItem[]>();
  const [next, setNext] = useState<string>();
  const [error, setError] = useState<unknown>();

  const load = async (cursor?: string) => {
    try {
      const page = await call("listWorkflows", {}, { query: { limit: 100, next: cursor } });
      setItems((previous) => [...(cursor === undefined ? [] : (previous ?? [])), ...page.workflows]);
      setNext(page.next);
      setError(undefined);
    } catch (failure) {
      setError(failure);
    }
  };
  useEffect(() => {
    void load();
  }, []);

  return (
    <section aria-labelledby="workflows-title">
      <header class="page-header">
        <h1 id="workflows-title">Workflows</h1>
      </header>
      <ErrorNote error={error} />
      {items === undefined && error === undefined && <Loading what="workflows" />}
      {items !== undefined && items.length === 0 && (
        <p class="muted">No workflow is registered yet: POST /workflows, or `weft register FILE`.</p>
      )}
      {items !== undefined && items.length > 0 && (
        <table class="table" data-testid="workflows-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Latest version</th>
              <th scope="col">Created</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={item.name} data-testid={`workflow-row-${item.name}`}>
                <td>
                  <a href={href({ page: "workflow", name: item.name })}>{item.name}</a>
                </td>
                <td>{item.latestVersion}</td>
                <td>{formatTime(item.createdAt)}</td>
                <td class="muted">{item.description ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next !== undefined && (
        <button type="button" class="more" onClick={() => void load(next)}>
          More workflows
        </button>
      )}
    </section>
  );
}

export function WorkflowPage({ name, version }: { name: string; version?: number | undefined }) {
  const [workflow, setWorkflow] = useState<WorkflowResponse>();
  const [latest, setLatest] = useState<number>();
  const [layout, setLayout] = useState<Layout>();
  const [error, setError] = useState<unknown>();
  const [selected, setSelected] = useState<string>();
  const [recent, setRecent] = useState<ExecutionListItem[]>();

  useEffect(() => {
    let live = true;
    setWorkflow(undefined);
    setLayout(undefined);
    setSelected(undefined);
    setError(undefined);
    (async () => {
      const found = await definitionOf(name, version);
      if (!live) return;
      setWorkflow(found);
      if (version === undefined) setLatest(found.version);
      else if (latest === undefined) setLatest((await definitionOf(name)).version);
      const laidOut = await layoutOf(found);
      if (live) setLayout(laidOut);
    })().catch((failure: unknown) => live && setError(failure));
    call("listExecutions", {}, { query: { workflow: name, limit: 10 } })
      .then((page) => live && setRecent(page.executions))
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [name, version]);

  const node = workflow?.definition.nodes.find((n) => n.id === selected);
  return (
    <section aria-labelledby="workflow-title">
      <header class="page-header">
        <p class="crumbs">
          <a href={href({ page: "workflows" })}>Workflows</a> /
        </p>
        <h1 id="workflow-title">{name}</h1>
        {workflow && latest !== undefined && (
          <label class="inline">
            Version{" "}
            <select
              aria-label="Version"
              value={workflow.version}
              onChange={(event) =>
                navigate({
                  page: "workflow",
                  name,
                  version: Number((event.target as HTMLSelectElement).value),
                })
              }
            >
              {Array.from({ length: latest }, (_, i) => latest - i).map((v) => (
                <option key={v} value={v}>
                  {v}
                  {v === latest ? " (latest)" : ""}
                </option>
              ))}
            </select>
          </label>
        )}
      </header>
      <ErrorNote error={error} />
      {workflow && (
        <Fields
          rows={[
            ["Version", workflow.version],
            ["Registered", formatTime(workflow.createdAt)],
            ["Nodes", workflow.definition.nodes.length],
            ["Definition hash", <code key="hash">{workflow.definitionHash.slice(0, 16)}…</code>],
            workflow.definition.description !== undefined && ["Description", workflow.definition.description],
          ]}
        />
      )}
      {workflow && <StartForm workflow={workflow} />}
      <div class="split">
        <div class="split-main">
          {workflow && layout === undefined && <Loading what="the graph" />}
          {layout && <GraphView layout={layout} selected={selected} onSelect={setSelected} />}
        </div>
        {node && (
          <aside class="panel" aria-label={`node ${node.id}`} data-testid="node-panel">
            <header class="panel-header">
              <h2>{node.id}</h2>
              <button type="button" class="close" aria-label="Close" onClick={() => setSelected(undefined)}>
                ×
              </button>
            </header>
            <NodeDefinition node={node} />
          </aside>
        )}
      </div>
      {recent !== undefined && recent.length > 0 && (
        <section aria-labelledby="recent-title">
          <h2 id="recent-title">Recent executions</h2>
          <ul class="plain">
            {recent.map((item) => (
              <li key={item.executionId}>
                <StatusBadge status={item.status} />{" "}
                <a href={href({ page: "execution", id: item.executionId })}>{item.executionId}</a>{" "}
                <span class="muted">
                  v{item.version} · {formatTime(item.createdAt)}
                </span>
              </li>
            ))}
          </ul>
          <a href={href({ page: "executions", workflow: name })}>All executions of {name}</a>
        </section>
      )}
    </section>
  );
}

type NodeDef = WorkflowResponse["definition"]["nodes"][number];

/** What the definition says of a node: type, params, dependencies, fan-in, condition, retries, placement. */
export function NodeDefinition({ node }: { node: NodeDef }) {
  return (
    <>
      <Fields
        rows={[
          ["Type", node.type],
          node.description !== undefined && ["Description", node.description],
          [
            "Depends on",
            node.dependsOn?.length ? node.dependsOn.map(dependencyLabel).join(", ") : "— (an entry node)",
          ],
          node.fanIn !== undefined && ["Fan-in", String(node.fanIn)],
          node.when !== undefined && ["When", <code key="when">{node.when}</code>],
          node.onError !== undefined && ["On error", node.onError],
          node.timeoutSeconds !== undefined && ["Timeout", `${node.timeoutSeconds} s`],
          node.heartbeatSeconds !== undefined && ["Heartbeat", `${node.heartbeatSeconds} s`],
          node.retry !== undefined && ["Retry", <code key="retry">{compactJson(node.retry)}</code>],
          node.runsOn !== undefined && ["Runs on", <code key="runsOn">{compactJson(node.runsOn)}</code>],
        ]}
      />
      <h3>Params</h3>
      <JsonBlock value={node.params} label="params" />
    </>
  );
}

function StartForm({ workflow }: { workflow: WorkflowResponse }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState("{}");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  if (!open) {
    return (
      <p>
        <button type="button" class="primary" onClick={() => setOpen(true)}>
          Start execution
        </button>
      </p>
    );
  }
  const start = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const input: unknown = text.trim() === "" ? undefined : parseExact(text);
      const ref = await call(
        "startExecution",
        {},
        {
          body: {
            workflow: workflow.name,
            version: workflow.version,
            ...(input === undefined ? {} : { input }),
          },
        },
      );
      navigate({ page: "execution", id: ref.executionId });
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={start} aria-label="start an execution">
      <label>
        Input (JSON)
        <textarea
          rows={5}
          value={text}
          spellcheck={false}
          onInput={(event) => setText((event.target as HTMLTextAreaElement).value)}
        />
      </label>
      <ErrorNote error={error} />
      <button type="submit" class="primary" disabled={busy}>
        Start version {workflow.version}
      </button>{" "}
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
    </form>
  );
}
