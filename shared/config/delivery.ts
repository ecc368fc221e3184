/**
 * How the task queue delivers, as deployed: the construct sets the queue up with these, and the
 * local runtime and the test runtime deliver the same way. One place, so the three cannot drift.
 */

/** Queue redrive: a task message received this many times without success goes to the DLQ. */
export const TASK_MAX_RECEIVE_COUNT = 5;
/** SQS visibility timeout is at least this many times the worker timeout (AWS guidance). */
export const VISIBILITY_TO_TIMEOUT_RATIO = 6;
