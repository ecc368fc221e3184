/** The EventPublisher port on an EventBridge bus. */
import {
  CreateEventBusCommand,
  DescribeEventBusCommand,
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsRequestEntry,
} from "@aws-sdk/client-eventbridge";
import type { EventPublisher, LifecycleEvent } from "../../ports.js";

/** PutEvents takes at most 10 entries per call. */
const BATCH_SIZE = 10;

export class EventBridgePublisher implements EventPublisher {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
    private readonly source = "weft",
  ) {}

  async publish(events: readonly LifecycleEvent[]): Promise<void> {
    const entries: PutEventsRequestEntry[] = events.map((event) => ({
      EventBusName: this.busName,
      Source: this.source,
      DetailType: event.detailType,
      Detail: JSON.stringify(event.detail),
    }));
    const batches: PutEventsRequestEntry[][] = [];
    for (let i = 0; i < entries.length; i += BATCH_SIZE) batches.push(entries.slice(i, i + BATCH_SIZE));
    await Promise.all(batches.map((batch) => this.putBatch(batch)));
  }

  /** One PutEvents call; failed entries are retried once, then the call throws. */
  private async putBatch(entries: PutEventsRequestEntry[]): Promise<void> {
    let pending = entries;
    for (let attempt = 0; attempt < 2; attempt++) {
      const result = await this.client.send(new PutEventsCommand({ Entries: pending }));
      if (!result.FailedEntryCount) return;
      // Result entries are positional: an entry with an ErrorCode failed.
      const results = result.Entries ?? [];
      const failed = pending.filter(
        (_, i) => results[i]?.ErrorCode !== undefined || results[i] === undefined,
      );
      if (attempt === 1 || failed.length === 0) {
        const codes = results.flatMap((r) =>
          r.ErrorCode ? [`${r.ErrorCode}: ${r.ErrorMessage ?? ""}`] : [],
        );
        throw new Error(
          `EventBridge PutEvents failed for ${result.FailedEntryCount} event(s): ${codes.join("; ")}`,
        );
      }
      pending = failed;
    }
  }
}

/** Creates the event bus when missing. Idempotent. */
export async function ensureEventBus(client: EventBridgeClient, name: string): Promise<void> {
  if (name === "default") return;
  try {
    await client.send(new DescribeEventBusCommand({ Name: name }));
    return;
  } catch (error) {
    if (!(error instanceof Error) || error.name !== "ResourceNotFoundException") throw error;
  }
  try {
    await client.send(new CreateEventBusCommand({ Name: name }));
  } catch (error) {
    if (!(error instanceof Error) || error.name !== "ResourceAlreadyExistsException") throw error;
  }
}
