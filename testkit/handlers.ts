/**
 * Which task handlers are doing real work right now. Virtual time may move on while a handler waits
 * in `context.sleep` (a `sleep` node: it is parked on the virtual clock), never while it runs code or
 * waits on anything real (a fetch, a timer of its own): the driver then waits for it in real time.
 * Every task type the runtime holds is wrapped so that its `run` reports this.
 */
import { TaskRegistry, type TaskType } from "../shared/tasks/task-type.js";
import type { Activity } from "./activity.js";

interface Handler {
  /** context.sleep calls under way: the handler is parked while there is one. */
  sleeping: number;
  ended: boolean;
}

export class RunningHandlers {
  private activeCount = 0;

  constructor(private readonly activity: Activity) {}

  /** Handlers running and not parked in context.sleep. */
  get active(): number {
    return this.activeCount;
  }

  /** The registry with every task type's `run` reporting to this gauge. */
  wrap(registry: TaskRegistry): TaskRegistry {
    return new TaskRegistry(registry.names().map((name) => this.wrapTask(registry.get(name)!)));
  }

  private wrapTask(task: TaskType): TaskType {
    // The engine runs these itself and never calls `run` (map, workflow, callback, merge).
    if (task.composite !== undefined || task.outputsDeps) return task;
    // Everything but `run` is read through the prototype: params, defer, expectedMs… as they were.
    const wrapped = Object.create(task) as TaskType;
    wrapped.run = (input) => this.track(task, input);
    return wrapped;
  }

  private async track(task: TaskType, input: Parameters<TaskType["run"]>[0]): Promise<unknown> {
    const handler: Handler = { sleeping: 0, ended: false };
    this.change(+1);
    const sleep = async (ms: number) => {
      if (handler.sleeping++ === 0 && !handler.ended) this.change(-1);
      try {
        await input.context.sleep(ms);
      } finally {
        if (--handler.sleeping === 0 && !handler.ended) this.change(+1);
      }
    };
    try {
      return await task.run({ ...input, context: { ...input.context, sleep } });
    } finally {
      // A sleep still under way (not awaited by the handler) has already taken it off the count.
      if (handler.sleeping === 0) this.change(-1);
      handler.ended = true;
    }
  }

  private change(delta: number): void {
    this.activeCount += delta;
    this.activity.bump();
  }
}
