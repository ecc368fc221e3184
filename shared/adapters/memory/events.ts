/** Keeps published lifecycle events in memory (embedded mode and tests). */
import type { EventPublisher, LifecycleEvent } from "../../ports.js";

export class MemoryEventPublisher implements EventPublisher {
  readonly events: LifecycleEvent[] = [];

  async publish(events: readonly LifecycleEvent[]): Promise<void> {
    this.events.push(...structuredClone([...events]));
  }
}
