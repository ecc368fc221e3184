/**
 * Catch edges (domain/edges.ts) through the real engine on each backend: Step Functions' travel
 * saga — book a hotel, a flight, a car, each booking undone by a compensation when a later one
 * fails — said with `dependsOn` edges alone, no `when`; failing at each step in turn runs exactly
 * the right compensations.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { HISTORY } from "../../shared/engine/lifecycle.js";
import { defineTask } from "../../shared/tasks/task-type.js";
import { BACKEND_KINDS, createBackend } from "../support/backends.js";
import { runToEnd } from "../support/harness.js";
import { PATIENT } from "../support/progress.js";

/** Books `step`, or fails with a terminal `<Step>Unavailable` when the input says this step fails. */
const book = defineTask({
  type: "book",
  params: z.object({ step: z.string() }).strict(),
  run: ({ params, input }) => {
    if ((input as { failAt?: string }).failAt === params.step) {
      const name = `${params.step[0]!.toUpperCase()}${params.step.slice(1)}Unavailable`;
      // Terminal (never retried): an uncaught one is kept as a dead letter, a caught one is not.
      throw Object.assign(new Error(`no ${params.step} left`), { name, terminal: true });
    }
    return { booked: params.step };
  },
});

/** Undoes a booking: says which, and what it saw of its dependencies. */
const undo = defineTask({
  type: "undo",
  params: z.object({ step: z.string() }).strict(),
  run: ({ params, deps }) => ({ cancelled: params.step, saw: deps }),
});

const once = { maxAttempts: 1 };

const saga = {
  name: "travel-saga",
  nodes: [
    { id: "hotel", type: "book", params: { step: "hotel" }, retry: once },
    { id: "flight", type: "book", params: { step: "flight" }, retry: once, dependsOn: ["hotel"] },
    { id: "car", type: "book", params: { step: "car" }, retry: once, dependsOn: ["flight"] },
    // The car failed: undo the flight, then the hotel.
    {
      id: "cancelFlight",
      type: "undo",
      params: { step: "flight" },
      dependsOn: [{ node: "car", on: "failure" }],
    },
    // The flight failed, or its booking was undone: undo the hotel.
    {
      id: "cancelHotel",
      type: "undo",
      params: { step: "hotel" },
      dependsOn: [{ node: "flight", on: "failure", errors: ["FlightUnavailable"] }, "cancelFlight"],
      fanIn: "any",
    },
  ],
};

describe.each(BACKEND_KINDS)("catch edges (%s)", PATIENT, (kind) => {
  it("the travel saga as catch edges: each failure runs exactly its compensations", async () => {
    const backend = await createBackend(kind, { tasks: [book, undo] });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow(saga);
      const run = async (failAt?: string) => {
        const { executionId } = await engine.createExecution({
          workflow: "travel-saga",
          input: failAt === undefined ? {} : { failAt },
        });
        const status = await runToEnd(engine, consumer, store, executionId);
        const view = await engine.describeExecution(executionId);
        const states = Object.fromEntries(view.nodes.map((n) => [n.id, n.status]));
        return { executionId, status, view, states };
      };

      const none = await run();
      expect(none.status).toBe("SUCCEEDED");
      expect(none.states).toEqual({
        hotel: "COMPLETED",
        flight: "COMPLETED",
        car: "COMPLETED",
        cancelFlight: "SKIPPED",
        cancelHotel: "SKIPPED",
      });

      // Nothing catches the hotel's failure: fail-fast, as without catch edges.
      const hotel = await run("hotel");
      expect(hotel.status).toBe("FAILED");
      expect(hotel.states.hotel).toBe("FAILED");
      expect(hotel.view.error?.message).toContain('node "hotel" failed');
      for (const id of ["flight", "car", "cancelFlight", "cancelHotel"])
        expect(hotel.states[id]).toBe("CANCELLED");

      // The flight's failure is caught: the car and its compensation are skipped, the hotel undone.
      const flight = await run("flight");
      expect(flight.status).toBe("SUCCEEDED");
      expect(flight.states).toEqual({
        hotel: "COMPLETED",
        flight: "FAILED",
        car: "SKIPPED",
        cancelFlight: "SKIPPED",
        cancelHotel: "COMPLETED",
      });
      const undoneHotel = flight.view.nodes.find((n) => n.id === "cancelHotel")?.output;
      expect(undoneHotel).toEqual({
        cancelled: "hotel",
        saw: { flight: { error: { name: "FlightUnavailable", message: "no flight left", attempt: 1 } } },
      });
      expect(flight.view.output).toEqual({ cancelHotel: undoneHotel });

      // The car's failure is caught: the flight undone, then the hotel.
      const car = await run("car");
      expect(car.status).toBe("SUCCEEDED");
      expect(car.states).toEqual({
        hotel: "COMPLETED",
        flight: "COMPLETED",
        car: "FAILED",
        cancelFlight: "COMPLETED",
        cancelHotel: "COMPLETED",
      });
      expect(car.view.nodes.find((n) => n.id === "cancelFlight")?.output).toMatchObject({
        saw: { car: { error: { name: "CarUnavailable", attempt: 1 } } },
      });

      // A caught failure is no dead letter (nothing to redrive); the uncaught one is.
      const { items } = await engine.listDeadLetters({ limit: 10 });
      expect(items.map((item) => [item.executionId, item.nodeId])).toEqual([[hotel.executionId, "hotel"]]);
      const history = await store.listHistory(car.executionId);
      expect(history.filter((e) => e.type === HISTORY.nodeFailed).map((e) => e.nodeId)).toEqual(["car"]);
    } finally {
      await backend.cleanup();
    }
  });

  it("an error a catch edge does not name is not caught: the execution fails", async () => {
    const backend = await createBackend(kind, { tasks: [book, undo] });
    try {
      const { engine, store, consumer } = backend;
      await engine.registerWorkflow({
        name: "narrow-catch",
        nodes: [
          { id: "flight", type: "book", params: { step: "flight" }, retry: once },
          {
            id: "refund",
            type: "undo",
            params: { step: "flight" },
            dependsOn: [{ node: "flight", on: "failure", errors: ["CardDeclined"] }],
          },
          {
            id: "always",
            type: "undo",
            params: { step: "log" },
            dependsOn: [{ node: "flight", on: "always", errors: ["Other"] }],
          },
        ],
      });
      const { executionId } = await engine.createExecution({
        workflow: "narrow-catch",
        input: { failAt: "flight" },
      });
      expect(await runToEnd(engine, consumer, store, executionId)).toBe("FAILED");
      const view = await engine.describeExecution(executionId);
      expect(Object.fromEntries(view.nodes.map((n) => [n.id, n.status]))).toEqual({
        flight: "FAILED",
        refund: "CANCELLED",
        always: "CANCELLED",
      });
      // `always` takes a completion too: with no failure both paths run on.
      const { executionId: fine } = await engine.createExecution({ workflow: "narrow-catch", input: {} });
      expect(await runToEnd(engine, consumer, store, fine)).toBe("SUCCEEDED");
      const ok = await engine.describeExecution(fine);
      expect(Object.fromEntries(ok.nodes.map((n) => [n.id, n.status]))).toEqual({
        flight: "COMPLETED",
        refund: "SKIPPED",
        always: "COMPLETED",
      });
      expect(ok.nodes.find((n) => n.id === "always")?.output).toEqual({
        cancelled: "log",
        saw: { flight: { booked: "flight" } },
      });
    } finally {
      await backend.cleanup();
    }
  });
});
