/** Dead-lettered work with its error, and redrive: of the ones selected, or of all. */
import { useEffect, useState } from "preact/hooks";
import { call, type DeadLetter, everyPage, type RedriveResponse } from "../api.js";
import { ErrorNote, Loading } from "../components/common.js";
import { errorLine, formatTime } from "../format.js";
import { href } from "../router.js";

export function DeadLettersPage() {
  const [items, setItems] = useState<DeadLetter[]>();
  const [error, setError] = useState<unknown>();
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [result, setResult] = useState<RedriveResponse>();
  const [busy, setBusy] = useState(false);

  const load = async () => {
    try {
      const all = await everyPage(async (next) => {
        const page = await call("listDeadLetters", {}, { query: { limit: 200, next } });
        return { items: page.deadLetters, next: page.next };
      });
      setItems(all);
      setChosen((previous) => new Set([...previous].filter((id) => all.some((item) => item.id === id))));
      setError(undefined);
    } catch (failure) {
      setError(failure);
    }
  };
  useEffect(() => {
    void load();
  }, []);

  const redrive = async (ids: string[] | undefined) => {
    setBusy(true);
    try {
      setResult(await call("redrive", {}, { body: ids === undefined ? {} : { messageIds: ids } }));
      setChosen(new Set());
      await load();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  const toggle = (id: string) =>
    setChosen((previous) => {
      const next = new Set(previous);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  return (
    <section aria-labelledby="dlq-title">
      <header class="page-header">
        <h1 id="dlq-title">Dead letters</h1>
        <div class="actions">
          <button type="button" onClick={() => void load()}>
            Refresh
          </button>
          <button
            type="button"
            class="primary"
            disabled={busy || chosen.size === 0}
            onClick={() => void redrive([...chosen])}
          >
            Redrive selected ({chosen.size})
          </button>
          <button type="button" disabled={busy || !items?.length} onClick={() => void redrive(undefined)}>
            Redrive all
          </button>
        </div>
      </header>
      <ErrorNote error={error} />
      {result && (
        <p class="note" role="status" data-testid="redrive-result">
          Redriven: {result.redriven.length}
          {result.skipped.length > 0 &&
            ` · skipped: ${result.skipped.map((skip) => `${skip.id} (${skip.reason})`).join(", ")}`}
        </p>
      )}
      {items === undefined && error === undefined && <Loading what="dead letters" />}
      {items !== undefined && items.length === 0 && <p class="muted">The dead-letter queue is empty.</p>}
      {items !== undefined && items.length > 0 && (
        <table class="table" data-testid="dlq-table">
          <thead>
            <tr>
              <th scope="col">
                <span class="sr-only">Select</span>
              </th>
              <th scope="col">Execution</th>
              <th scope="col">Node</th>
              <th scope="col">Attempt</th>
              <th scope="col">Error</th>
              <th scope="col">Reason</th>
              <th scope="col">At</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={item.id} data-testid={`dead-letter-${item.id}`}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`select ${item.id}`}
                    checked={chosen.has(item.id)}
                    onChange={() => toggle(item.id)}
                  />
                </td>
                <td>
                  <a class="mono" href={href({ page: "execution", id: item.executionId, node: item.nodeId })}>
                    {item.executionId}
                  </a>
                </td>
                <td>{item.nodeId}</td>
                <td>{item.attempt}</td>
                <td class="error-text">{errorLine(item.error)}</td>
                <td>
                  {item.reason}
                  {item.receiveCount === undefined ? "" : ` (received ${item.receiveCount}×)`}
                </td>
                <td>{formatTime(item.at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
