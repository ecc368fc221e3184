/** Small shared pieces: status badges, JSON blocks, errors, key-value lists. */
import type { ComponentChildren } from "preact";
import { errorMessage } from "../api.js";
import { json } from "../format.js";

export function StatusBadge({ status }: { status: string }) {
  return (
    <span class="badge" data-state={status} data-testid="status">
      {status}
    </span>
  );
}

export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  if (value === undefined) return <p class="muted">—</p>;
  return (
    <section aria-label={label}>
      <pre class="json">{json(value)}</pre>
    </section>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="error-note" role="alert">
      {errorMessage(error)}
    </p>
  );
}

export function Fields({ rows }: { rows: Array<[string, ComponentChildren] | false | undefined> }) {
  const present = rows.filter((row): row is [string, ComponentChildren] => Array.isArray(row));
  return (
    <dl class="fields">
      {present.map(([name, value]) => (
        <div key={name} class="field">
          <dt>{name}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}
