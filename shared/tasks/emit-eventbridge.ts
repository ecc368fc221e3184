/** The EventSender port of the `emit` task on EventBridge PutEvents. */

import {
  type EventBridgeClient,
  PutEventsCommand,
  type PutEventsCommandOutput,
} from "@aws-sdk/client-eventbridge";
import { stringifyExact } from "../domain/exact-numbers.js";
import { type AwsCall, accessDeniedError, classifyAwsError } from "./aws-errors.js";
import type { EmitEntry, EventSender } from "./emit.js";
import { RetryableError, TerminalError } from "./errors.js";

/** Entry error codes worth another attempt; any other one will fail the same way again. */
const RETRYABLE_ENTRY_ERRORS = new Set(["ThrottlingException", "InternalFailure", "InternalException"]);

export class EventBridgeSender implements EventSender {
  constructor(private readonly client: EventBridgeClient) {}

  async send(entry: EmitEntry, signal?: AbortSignal): Promise<{ eventId?: string }> {
    const call: AwsCall = {
      what: `putting an event on bus ${entry.busName}`,
      grant: {
        action: "events:PutEvents",
        resource: entry.busName,
        contextKey: "weft:extraEventBusArns",
        prop: "extraEventBusArns",
      },
    };
    let result: PutEventsCommandOutput;
    try {
      result = await this.client.send(
        new PutEventsCommand({
          Entries: [
            {
              EventBusName: entry.busName,
              Source: entry.source,
              DetailType: entry.detailType,
              Detail: stringifyExact(entry.detail),
            },
          ],
        }),
        signal === undefined ? {} : { abortSignal: signal },
      );
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw classifyAwsError(error, call);
    }
    const first = result.Entries?.[0];
    if (result.FailedEntryCount || first?.ErrorCode) {
      const code = first?.ErrorCode ?? "Unknown";
      if (code === "AccessDeniedException") throw accessDeniedError(call, code, first?.ErrorMessage ?? "");
      const message = `PutEvents to bus ${entry.busName} failed: ${code}: ${first?.ErrorMessage ?? ""}`;
      throw RETRYABLE_ENTRY_ERRORS.has(code) ? new RetryableError(message) : new TerminalError(message);
    }
    return first?.EventId ? { eventId: first.EventId } : {};
  }
}
