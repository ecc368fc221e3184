/**
 * An execution's history, read incrementally: the first read takes every page; each later one
 * re-reads the last page from its cursor and keeps only what is new (the cursor is opaque, never
 * forged), so following a running execution costs one request per poll.
 */
import { call, type EventsPage } from "./api.js";

export type HistoryEvent = EventsPage["events"][number];

const PAGE = 1000;

export class HistoryFeed {
  readonly events: HistoryEvent[] = [];
  private cursor: string | undefined;
  private inPage = 0;
  private reading: Promise<boolean> | undefined;

  constructor(private readonly executionId: string) {}

  /** Reads what is new; true when something was. One read at a time. */
  drain(): Promise<boolean> {
    this.reading ??= this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async read(): Promise<boolean> {
    let added = false;
    for (;;) {
      const page = await call(
        "listEvents",
        { id: this.executionId },
        { query: { limit: PAGE, ...(this.cursor === undefined ? {} : { after: this.cursor }) } },
      );
      const fresh = page.events.slice(this.inPage);
      if (fresh.length > 0) {
        this.events.push(...fresh);
        added = true;
      }
      this.inPage = Math.max(this.inPage, page.events.length);
      if (page.next === undefined) return added;
      this.cursor = page.next;
      this.inPage = 0;
    }
  }
}
