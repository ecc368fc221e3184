/** Port types the bench uses (re-exported so bench files import them from one place). */
export type { EnginePorts, QueueConsumer, ReceivedMessage } from "../shared/ports.js";

export interface HistoryEventLike {
  at: number;
  type: string;
  nodeId?: string;
}
