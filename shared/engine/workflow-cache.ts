/**
 * Workflow versions kept in the process. A version never changes once written, so it is read from
 * the store once per process and kept (a bounded LRU by bytes of definition). A name's latest
 * version (the HEAD) may change: it is kept for `headTtlMs` only, and dropped at once when this
 * process registers a version of that name. Without the cache every start read its definition
 * strongly from the workflow's one partition: the per-workflow start ceiling (bench --capacity).
 */
import type { WorkflowVersionRecord } from "../domain/records.js";
import type { Clock, Store } from "../ports.js";

/** The one bound on what the cache keeps: bytes of definition JSON, summed over the versions kept. */
export const WORKFLOW_CACHE_MAX_BYTES = 32 * 1024 * 1024;

/** How long a name's latest version is trusted (WEFT_WORKFLOW_HEAD_CACHE_MS's default). */
export const DEFAULT_WORKFLOW_HEAD_TTL_MS = 1000;

export interface WorkflowCacheOptions {
  maxBytes?: number;
  headTtlMs?: number;
}

interface Kept {
  record: WorkflowVersionRecord;
  bytes: number;
  /** What callers derive from the version (its compiled graph), kept and evicted with it. */
  derived: Map<string, unknown>;
}

const versionKey = (name: string, version: number) => `${name}@${version}`;

export class WorkflowVersions {
  /** By name@version; Map order is recency (a hit moves the entry to the end). */
  private readonly kept = new Map<string, Kept>();
  private bytes = 0;
  private readonly heads = new Map<string, { version: number; until: number }>();
  private readonly maxBytes: number;
  private readonly headTtlMs: number;

  constructor(
    private readonly ports: {
      store: Pick<Store, "getWorkflowVersion" | "getLatestWorkflowVersion">;
      clock: Clock;
    },
    options: WorkflowCacheOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? WORKFLOW_CACHE_MAX_BYTES;
    this.headTtlMs = options.headTtlMs ?? DEFAULT_WORKFLOW_HEAD_TTL_MS;
  }

  /** One version: from the process when kept, else read once and kept. Undefined: no such version. */
  async version(name: string, version: number): Promise<WorkflowVersionRecord | undefined> {
    return (await this.entry(name, version))?.record;
  }

  /**
   * A value derived from a version (e.g. its compiled graph), computed once per kept version.
   * Undefined when the version does not exist.
   */
  async derived<T>(
    name: string,
    version: number,
    kind: string,
    derive: (record: WorkflowVersionRecord) => T,
  ): Promise<T | undefined> {
    const entry = await this.entry(name, version);
    if (!entry) return undefined;
    if (!entry.derived.has(kind)) entry.derived.set(kind, derive(entry.record));
    return entry.derived.get(kind) as T;
  }

  /**
   * The latest version of a name. Within `headTtlMs` of the last look the version number found then
   * is used (the version itself comes from the cache, or a read of that exact version): a new
   * version takes effect for this process's starts at most that long after it was registered
   * elsewhere. A remembered HEAD only ever names a version that was read, and versions are never
   * deleted, so it cannot name one that does not exist.
   */
  async latest(name: string): Promise<WorkflowVersionRecord | undefined> {
    const now = this.ports.clock.now();
    const head = this.heads.get(name);
    if (head && head.until > now) {
      const kept = await this.version(name, head.version);
      if (kept) return kept;
    }
    // The head item's number (a few bytes, eventually consistent), then that version from the
    // cache or by an exact read. No read is shared between callers: one that hangs or dies (a
    // crashed invocation's, as the simulation plays it) must not hold up another's start.
    const latest = await this.ports.store.getLatestWorkflowVersion(name);
    const record = latest === undefined ? undefined : await this.version(name, latest);
    if (!record) {
      this.heads.delete(name);
      return undefined;
    }
    const known = this.heads.get(name);
    // A slower read must not move the HEAD back below a version this process already saw.
    if (!known || known.version <= record.version || known.until <= now)
      this.heads.set(name, { version: record.version, until: now + this.headTtlMs });
    return record;
  }

  /** This process registered (or found) `record`: its next start of the name uses it at once. */
  registered(record: WorkflowVersionRecord): void {
    this.keep(record);
    this.heads.set(record.name, {
      version: record.version,
      until: this.ports.clock.now() + this.headTtlMs,
    });
  }

  /** Forgets a name's HEAD, so that the next `latest` reads it (a registration found nothing new). */
  forgetHead(name: string): void {
    this.heads.delete(name);
  }

  /** Bytes of definition kept now (tests and the bench read it). */
  get keptBytes(): number {
    return this.bytes;
  }

  private async entry(name: string, version: number): Promise<Kept | undefined> {
    const key = versionKey(name, version);
    const hit = this.kept.get(key);
    if (hit) {
      this.kept.delete(key);
      this.kept.set(key, hit);
      return hit;
    }
    const record = await this.ports.store.getWorkflowVersion(name, version);
    // A version not found is not remembered: it may be registered a moment later.
    return record && this.keep(record);
  }

  private keep(record: WorkflowVersionRecord): Kept {
    const key = versionKey(record.name, record.version);
    const existing = this.kept.get(key);
    if (existing) return existing;
    const entry: Kept = {
      record,
      bytes: Buffer.byteLength(JSON.stringify(record.definition), "utf8"),
      derived: new Map(),
    };
    this.kept.set(key, entry);
    this.bytes += entry.bytes;
    // Oldest first; the entry just kept stays even when it alone is over the bound.
    for (const [oldKey, old] of this.kept) {
      if (this.bytes <= this.maxBytes || oldKey === key) break;
      this.kept.delete(oldKey);
      this.bytes -= old.bytes;
    }
    return entry;
  }
}
