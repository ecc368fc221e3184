/** The EventSender port of the `emit` task on EventBridge PutEvents. */
import { type EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import type { EmitEntry, EventSender } from "./emit.js";
import { RetryableError, TerminalError } from "./errors.js";

/** Entry error codes worth another attempt; any other one will fail the same way again. */
const RETRYABLE_ENTRY_ERRORS = new Set(["ThrottlingException", "InternalFailure", "InternalException"]);

export class EventBridgeSender implements EventSender {
  constructor(private readonly client: EventBridgeClient) {}

  async send(entry: EmitEntry, signal?: AbortSignal): Promise<{ eventId?: string }> {
    const result = await this.client.send(
      new PutEventsCommand({
        Entries: [
          {
            EventBusName: entry.busName,
            Source: entry.source,
            DetailType: entry.detailType,
            Detail: JSON.stringify(entry.detail),
          },
        ],
      }),
      signal === undefined ? {} : { abortSignal: signal },
    );
    const first = result.Entries?.[0];
    if (result.FailedEntryCount || first?.ErrorCode) {
      const code = first?.ErrorCode ?? "Unknown";
      const message = `PutEvents to bus ${entry.busName} failed: ${code}: ${first?.ErrorMessage ?? ""}`;
      throw RETRYABLE_ENTRY_ERRORS.has(code) ? new RetryableError(message) : new TerminalError(message);
    }
    return first?.EventId ? { eventId: first.EventId } : {};
  }
}
