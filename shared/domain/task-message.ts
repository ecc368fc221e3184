/**
 * A task message: what the queue carries to a worker, and what a durable timer delivers
 * (domain/timers.ts). The ids it names are what its handling is fenced on.
 */
export interface TaskMessage {
  executionId: string;
  nodeId: string;
  attempt: number;
  /**
   * The first attempt of an `any` or `count:N` join (dispatch-mode.ts): the dependencies its
   * decider saw completed (node indexes), which its claim records as its inputs.
   */
  deps?: number[];
  /**
   * The W3C `traceparent` the message was sent in (domain/trace.ts): its trace id is the
   * execution's. Informational — the attempt's span is derived from the execution record, which a
   * message without it (or from before traces) leaves unchanged.
   */
  trace?: string;
  /**
   * A check (engine/checks.ts): handled as a redelivery, so a node whose propagation was cut short
   * has it driven again. Armed before a write made outside any queue message (the api's).
   */
  check?: true;
  /**
   * How many re-drives a check is from the event that started it (a redelivery, an api call): a
   * re-drive watches the nodes it finds running only up to the continuation budget deep, so checks
   * die out instead of following an execution's frontier for ever.
   */
  hops?: number;
  /**
   * How many times a message found its execution not written yet and was sent again: a start sends
   * its entries' messages before it writes the execution (engine/executions.ts), so a message may
   * outrun the write it follows — or follow a start that died before it. A few times, then dropped.
   */
  early?: number;
  /**
   * The lease token a timer watches (an external task's lease, engine/external.ts): once its node
   * holds another lease, or the message is a plain copy without it, the timer does nothing.
   */
  lease?: string;
}
