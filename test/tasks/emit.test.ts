/**
 * The `emit` task type on the emulator: a workflow's `emit` node puts an event on a bus, an
 * EventBridge rule matching its detail-type sends it to an SQS queue, and the test receives it there.
 */
import {
  CreateEventBusCommand,
  DeleteEventBusCommand,
  DeleteRuleCommand,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from "@aws-sdk/client-eventbridge";
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { emitTask, MemoryEventSender } from "../../shared/tasks/emit.js";
import { EventBridgeSender } from "../../shared/tasks/emit-eventbridge.js";
import { type AwsClients, awsClients, uniqueName } from "../support/aws.js";
import { type Backend, createBackend, EMULATOR } from "../support/backends.js";
import { runWorkflow } from "./helpers.js";

const DETAIL_TYPE = "Order Shipped";

describe("emit task (EventBridge rule → SQS on the emulator)", () => {
  let clients: AwsClients;
  let backend: Backend;
  const bus = uniqueName("emit-bus");
  const rule = uniqueName("emit-rule");
  let queueUrl = "";

  beforeAll(async () => {
    // The rule's target queue must live where EventBridge delivers: on the EventBridge emulator (moto),
    // which with WEFT_TEST_EMULATOR=dynamodb-local is not the SQS emulator the engine uses.
    const endpoints = inject("awsEndpoints");
    clients = awsClients({ ...endpoints, sqs: endpoints.eventbridge });
    await clients.eventBridge.send(new CreateEventBusCommand({ Name: bus }));
    const queue = await clients.sqs.send(new CreateQueueCommand({ QueueName: uniqueName("emit-target") }));
    queueUrl = queue.QueueUrl ?? "";
    const attributes = await clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["QueueArn"] }),
    );
    const queueArn = attributes.Attributes?.QueueArn ?? "";
    const created = await clients.eventBridge.send(
      new PutRuleCommand({
        Name: rule,
        EventBusName: bus,
        EventPattern: JSON.stringify({ "detail-type": [DETAIL_TYPE] }),
      }),
    );
    await clients.sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: queueUrl,
        Attributes: {
          Policy: JSON.stringify({
            Version: "2012-10-17",
            Statement: [
              {
                Effect: "Allow",
                Principal: { Service: "events.amazonaws.com" },
                Action: "sqs:SendMessage",
                Resource: queueArn,
                Condition: { ArnEquals: { "aws:SourceArn": created.RuleArn } },
              },
            ],
          }),
        },
      }),
    );
    await clients.eventBridge.send(
      new PutTargetsCommand({ Rule: rule, EventBusName: bus, Targets: [{ Id: "queue", Arn: queueArn }] }),
    );
    backend = await createBackend(EMULATOR, {
      tasks: [emitTask(new EventBridgeSender(clients.eventBridge), bus)],
    });
  });

  afterAll(async () => {
    await backend?.cleanup();
    if (!clients) return;
    await clients.eventBridge
      .send(new RemoveTargetsCommand({ Rule: rule, EventBusName: bus, Ids: ["queue"] }))
      .catch(() => {});
    await clients.eventBridge.send(new DeleteRuleCommand({ Name: rule, EventBusName: bus })).catch(() => {});
    await clients.eventBridge.send(new DeleteEventBusCommand({ Name: bus })).catch(() => {});
    if (queueUrl) await clients.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => {});
    clients.destroy();
  });

  async function receiveEvents(expected: number): Promise<Array<Record<string, unknown>>> {
    const events: Array<Record<string, unknown>> = [];
    const deadline = Date.now() + 10_000;
    while (events.length < expected && Date.now() < deadline) {
      const { Messages = [] } = await clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      events.push(...Messages.map((m) => JSON.parse(m.Body ?? "{}") as Record<string, unknown>));
    }
    return events;
  }

  it("delivers the event to the queue the rule targets, with its detail-type, source and detail", async () => {
    const run = await runWorkflow(
      backend,
      {
        name: uniqueName("emit-flow"),
        nodes: [
          { id: "ship", type: "pass", params: { value: { tracking: "TR-1" } } },
          {
            id: "announce",
            type: "emit",
            dependsOn: ["ship"],
            params: { detailType: DETAIL_TYPE, detail: { orderId: "o-42", items: [1, 2], express: true } },
          },
          // Another detail-type: the rule does not match it, so it never reaches the queue.
          { id: "other", type: "emit", params: { detailType: "Order Noted", source: "shop.orders" } },
        ],
      },
      { orderId: "o-42" },
    );
    expect(run.view.status).toBe("SUCCEEDED");
    // PutEvents answers with the event's id, which the node returns.
    const output = run.node("announce").output as { eventId: string };
    expect(output).toEqual({ eventId: expect.any(String) });

    const events = await receiveEvents(1);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      "detail-type": DETAIL_TYPE,
      source: "weft.workflow",
      detail: { orderId: "o-42", items: [1, 2], express: true },
    });
    expect(events[0]?.id).toBe(output.eventId);
    // Nothing else arrives (the other detail-type did not match).
    const { Messages = [] } = await clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(Messages).toHaveLength(0);
  });

  it("refuses bad params at submit", async () => {
    await expect(
      backend.engine.registerWorkflow({
        name: uniqueName("emit-bad"),
        nodes: [{ id: "e", type: "emit", params: { detailType: "", detail: [1], source: "aws.fake" } }],
      }),
    ).rejects.toMatchObject({
      code: "InvalidDefinition",
      details: expect.arrayContaining([
        expect.objectContaining({ code: "invalid_params", path: "nodes[0].params.detailType" }),
        expect.objectContaining({ code: "invalid_params", path: "nodes[0].params.detail" }),
        expect.objectContaining({ code: "invalid_params", path: "nodes[0].params.source" }),
      ]),
    });
  });
});

describe("emit task (embedded mode)", () => {
  it("hands the entry to the sender with the default bus and source, and returns the event id", async () => {
    const sender = new MemoryEventSender();
    const backend = await createBackend("memory", { tasks: [emitTask(sender, "lifecycle-bus")] });
    try {
      const run = await runWorkflow(backend, {
        name: "emit-memory",
        nodes: [
          { id: "a", type: "emit", params: { detailType: "Thing Happened", detail: { n: 1 } } },
          { id: "b", type: "emit", params: { detailType: "Other", source: "shop", eventBusName: "audit" } },
        ],
      });
      expect(run.view.output).toEqual({
        a: { eventId: expect.any(String) },
        b: { eventId: expect.any(String) },
      });
      expect(sender.sent).toEqual(
        expect.arrayContaining([
          {
            busName: "lifecycle-bus",
            source: "weft.workflow",
            detailType: "Thing Happened",
            detail: { n: 1 },
          },
          { busName: "audit", source: "shop", detailType: "Other", detail: {} },
        ]),
      );
    } finally {
      await backend.cleanup();
    }
  });
});
