/**
 * The engine's own CPU per node, with no HTTP, poller or SDK: the engine on in-memory ports, the
 * executions created directly and their task messages handled in a tight loop off a MemoryQueue.
 */
import { MemoryBlobStore } from "../shared/adapters/memory/blobs.js";
import { MemoryEventPublisher } from "../shared/adapters/memory/events.js";
import { MemoryQueue } from "../shared/adapters/memory/queue.js";
import { MemoryStore } from "../shared/adapters/memory/store.js";
import { randomIds, systemClock } from "../shared/adapters/system.js";
import { silentLogger } from "../shared/engine/context.js";
import { Engine } from "../shared/engine/engine.js";
import type { TaskMessage } from "../shared/ports.js";
import { createTaskRegistry } from "../shared/tasks/builtins.js";
import { BENCH_TASKS, type Workload } from "./workloads.js";

export interface EngineCpuResult {
  workload: string;
  nodes: number;
  taskMessages: number;
  cpuMs: number;
  cpuMsPerNode: number;
  wallMs: number;
}

export async function measureEngineCpu(
  workload: Workload,
  options: { inlineBytes?: number } = {},
): Promise<EngineCpuResult> {
  const queue = new MemoryQueue({ clock: systemClock });
  const store = new MemoryStore();
  const engine = new Engine(
    {
      store,
      blobs: new MemoryBlobStore(),
      queue,
      events: new MemoryEventPublisher(),
      clock: systemClock,
      ids: randomIds,
    },
    createTaskRegistry(BENCH_TASKS),
    {
      logger: silentLogger,
      ...(options.inlineBytes === undefined ? {} : { payloads: { inlineBytes: options.inlineBytes } }),
    },
  );
  await engine.registerWorkflow(workload.definition);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const ids: string[] = [];
  for (let i = 0; i < workload.executions; i++) {
    const created = await engine.createExecution({
      workflow: workload.definition.name,
      input: { ...workload.input, i },
    });
    ids.push(created.executionId);
  }
  let taskMessages = 0;
  for (;;) {
    const batch = await queue.receive({ maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    if (batch.length === 0) break;
    for (const message of batch) {
      await engine.handleTask(JSON.parse(message.body) as TaskMessage, {
        receiveCount: message.receiveCount,
      });
      taskMessages += 1;
    }
    await queue.delete(batch.map((m) => m.receiptHandle));
  }
  const cpu = process.cpuUsage(cpu0);
  const wallMs = performance.now() - t0;
  let nodes = 0;
  for (const id of ids) {
    const execution = await store.getExecution(id);
    if (execution?.status !== "SUCCEEDED")
      throw new Error(`engine-only run: execution ${id} is ${execution?.status}`);
    nodes += (await store.listNodes(id)).filter((n) => n.status === "COMPLETED").length;
    // A map's items are nodes too (kept apart from the execution's nodes in the store).
    for (const spec of workload.definition.nodes.filter((n) => n.type === "map")) {
      const items = await store.listMapItems(id, spec.id, 1, { statusOnly: true });
      nodes += items.filter((n) => n.status === "COMPLETED").length;
    }
  }
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return { workload: workload.name, nodes, taskMessages, cpuMs, cpuMsPerNode: cpuMs / nodes, wallMs };
}
