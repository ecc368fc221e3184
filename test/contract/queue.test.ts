/** The queue contract on every adapter: in memory, and SQS on the emulator (moto by default). */
import { DeleteQueueCommand } from "@aws-sdk/client-sqs";
import { inject } from "vitest";
import { MemoryQueue } from "../../shared/adapters/memory/queue.js";
import { SqsQueueConsumer, SqsTaskQueue } from "../../shared/adapters/sqs/queue.js";
import { ensureQueues } from "../../shared/adapters/sqs/queues.js";
import { systemClock } from "../../shared/adapters/system.js";
import { awsClients, uniqueName } from "../support/aws.js";
import { describeQueueContract } from "./queue.contract.js";

describeQueueContract("MemoryQueue", async () => {
  const queue = new MemoryQueue({ clock: systemClock });
  return { queue, consumer: queue };
});

describeQueueContract("SQS (emulator)", async () => {
  const clients = awsClients(inject("awsEndpoints"));
  const { queueUrl, deadLetterUrl } = await ensureQueues(clients.sqs, {
    queue: uniqueName("weft-contract"),
    deadLetter: uniqueName("weft-contract-dlq"),
  });
  return {
    queue: new SqsTaskQueue(clients.sqs, queueUrl),
    consumer: new SqsQueueConsumer(clients.sqs, queueUrl),
    async cleanup() {
      await Promise.allSettled([
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })),
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: deadLetterUrl })),
      ]);
      clients.destroy();
    },
  };
});
