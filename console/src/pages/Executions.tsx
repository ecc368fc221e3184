/** Executions, newest first: filtered by workflow and status, searched by id, refreshed while shown. */
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, call, type ExecutionListItem, type WorkflowListItem } from "../api.js";
import { ErrorNote, Loading, StatusBadge } from "../components/common.js";
import { between, formatDuration, formatTime } from "../format.js";
import { href, navigate } from "../router.js";

const STATUSES = ["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"];
const REFRESH_MS = 3000;

export function ExecutionsPage({
  workflow,
  status,
}: {
  workflow?: string | undefined;
  status?: string | undefined;
}) {
  const [items, setItems] = useState<ExecutionListItem[]>();
  const [next, setNext] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [workflows, setWorkflows] = useState<WorkflowListItem[]>([]);
  const [search, setSearch] = useState("");
  const [searchError, setSearchError] = useState<string>();
  // Pages beyond the first, kept while the first is refreshed.
  const extra = useRef<ExecutionListItem[]>([]);

  useEffect(() => {
    call("listWorkflows", {}, { query: { limit: 200 } })
      .then((page) => setWorkflows(page.workflows))
      .catch(() => undefined);
  }, []);

  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    extra.current = [];
    setItems(undefined);
    setNext(undefined);
    const refresh = async () => {
      try {
        const page = await call("listExecutions", {}, { query: { workflow, status, limit: 50 } });
        if (!live) return;
        const seen = new Set(page.executions.map((item) => item.executionId));
        setItems([...page.executions, ...extra.current.filter((item) => !seen.has(item.executionId))]);
        if (extra.current.length === 0) setNext(page.next);
        setError(undefined);
      } catch (failure) {
        if (live) setError(failure);
      }
      if (live) timer = setTimeout(refresh, REFRESH_MS);
    };
    void refresh();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [workflow, status]);

  const more = async () => {
    if (next === undefined) return;
    try {
      const page = await call("listExecutions", {}, { query: { workflow, status, limit: 50, next } });
      extra.current = [...extra.current, ...page.executions];
      setItems((previous) => [...(previous ?? []), ...page.executions]);
      setNext(page.next);
    } catch (failure) {
      setError(failure);
    }
  };

  const find = async (event: Event) => {
    event.preventDefault();
    const id = search.trim();
    if (id === "") return;
    try {
      await call("describeExecution", { id }, { query: { resolve: "false" } });
      navigate({ page: "execution", id });
    } catch (failure) {
      setSearchError(
        failure instanceof ApiError && failure.status === 404 ? `no execution "${id}"` : String(failure),
      );
    }
  };

  const filter = (changes: { workflow?: string | undefined; status?: string | undefined }) =>
    navigate({ page: "executions", workflow, status, ...changes }, { replace: true });
  const needle = search.trim().toLowerCase();
  const shown = (items ?? []).filter(
    (item) => needle === "" || item.executionId.toLowerCase().includes(needle),
  );

  return (
    <section aria-labelledby="executions-title">
      <header class="page-header">
        <h1 id="executions-title">Executions</h1>
      </header>
      <form class="filters" onSubmit={find} aria-label="filter and search executions">
        <label>
          Workflow{" "}
          <select
            aria-label="Workflow"
            value={workflow ?? ""}
            onChange={(event) => filter({ workflow: (event.target as HTMLSelectElement).value || undefined })}
          >
            <option value="">all</option>
            {workflow !== undefined && !workflows.some((w) => w.name === workflow) && (
              <option value={workflow}>{workflow}</option>
            )}
            {workflows.map((w) => (
              <option key={w.name} value={w.name}>
                {w.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status{" "}
          <select
            aria-label="Status"
            value={status ?? ""}
            onChange={(event) => filter({ status: (event.target as HTMLSelectElement).value || undefined })}
          >
            <option value="">all</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label class="grow">
          Execution id{" "}
          <input
            type="search"
            aria-label="Search by execution id"
            placeholder="an id, or part of one"
            value={search}
            onInput={(event) => {
              setSearch((event.target as HTMLInputElement).value);
              setSearchError(undefined);
            }}
          />
        </label>
        <button type="submit">Open</button>
      </form>
      {searchError && (
        <p class="error-note" role="alert">
          {searchError}
        </p>
      )}
      <ErrorNote error={error} />
      {items === undefined && error === undefined && <Loading what="executions" />}
      {items !== undefined && shown.length === 0 && <p class="muted">No executions.</p>}
      {shown.length > 0 && (
        <table class="table" data-testid="executions-table">
          <thead>
            <tr>
              <th scope="col">Execution</th>
              <th scope="col">Workflow</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((item) => (
              <tr key={item.executionId} data-testid={`execution-row-${item.executionId}`}>
                <td>
                  <a class="mono" href={href({ page: "execution", id: item.executionId })}>
                    {item.executionId}
                  </a>
                </td>
                <td>
                  <a href={href({ page: "workflow", name: item.workflow, version: item.version })}>
                    {item.workflow}
                  </a>{" "}
                  <span class="muted">v{item.version}</span>
                </td>
                <td>
                  <StatusBadge status={item.status} />
                </td>
                <td>{formatTime(item.createdAt)}</td>
                <td>{formatDuration(between(item.startedAt, item.finishedAt))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next !== undefined && (
        <button type="button" class="more" onClick={() => void more()}>
          More executions
        </button>
      )}
    </section>
  );
}
