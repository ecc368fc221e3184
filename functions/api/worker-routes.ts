/**
 * External workers and callbacks: registerWorker, listWorkers, workerHeartbeat, deregisterWorker,
 * pollTask (a long poll: 204 when no task came within its wait), heartbeatTask, completeTask,
 * failTask, completeCallback, failCallback, heartbeatCallback.
 *
 * Tokens travel in bodies and are checked here before the engine reads anything: one this API never
 * gave is a 400 naming the field; one it gave for an attempt that is over is the engine's 409. No
 * token, output or error text is ever logged.
 */

import { decodeAttemptToken } from "../../shared/domain/attempt-token.js";
import { RequestError } from "../../shared/domain/errors.js";
import * as z from "../../shared/domain/zod.js";
import type { Engine } from "../../shared/engine/engine.js";
import {
  callbackTokenBodySchema,
  completeCallbackBodySchema,
  completeTaskBodySchema,
  failCallbackBodySchema,
  failTaskBodySchema,
  listWorkersQuerySchema,
  pollBodySchema,
  registerWorkerBodySchema,
  taskTokenBodySchema,
  workerIdParamsSchema,
} from "../../shared/http/schemas.js";
import {
  cursorIn,
  optionalBody,
  parseJson,
  type RouteHandlers,
  validate,
  validateParams,
  validateQuery,
} from "./request.js";

type WorkerRoutes =
  | "registerWorker"
  | "listWorkers"
  | "workerHeartbeat"
  | "deregisterWorker"
  | "pollTask"
  | "heartbeatTask"
  | "completeTask"
  | "failTask"
  | "completeCallback"
  | "failCallback"
  | "heartbeatCallback";

/** A request that carries nothing: an absent body, or `{}` (any field in it is unknown). */
const emptyBodySchema = z.strictObject({});

const ACCEPTED = { accepted: true } as const;

/** The token in `field` as this API encodes them, or a 400 naming the field. */
function checkToken(field: "taskToken" | "token", token: string): string {
  if (decodeAttemptToken(token) !== undefined) return token;
  const what = field === "taskToken" ? "a task token POST /workers/{id}/poll answered" : "a callback token";
  throw new RequestError("InvalidRequest", `${field} is not ${what}`, {
    details: [{ path: field, code: "invalid_token", message: `not ${what}` }],
  });
}

export function workerHandlers(engine: Engine): RouteHandlers<WorkerRoutes> {
  return {
    registerWorker: async ({ body }) => {
      const registration = validate(registerWorkerBodySchema, parseJson(body, { required: true }));
      return { status: 201, body: await engine.registerWorker(registration) };
    },
    listWorkers: async ({ query }) => {
      const { limit, next } = validateQuery(listWorkersQuerySchema, query);
      const page = await engine
        .listWorkers({ limit, ...(next === undefined ? {} : { next }) })
        .catch((error: unknown) => {
          throw cursorIn("next", error);
        });
      return { status: 200, body: page };
    },
    workerHeartbeat: async ({ params, body }) => {
      const { id } = validateParams(workerIdParamsSchema, params);
      optionalBody(emptyBodySchema, body);
      return { status: 200, body: await engine.workerHeartbeat(id) };
    },
    deregisterWorker: async ({ params, body }) => {
      const { id } = validateParams(workerIdParamsSchema, params);
      optionalBody(emptyBodySchema, body);
      const { released } = await engine.deregisterWorker(id);
      return { status: 200, body: { workerId: id, released } };
    },
    pollTask: async ({ params, body, signal }) => {
      const { id } = validateParams(workerIdParamsSchema, params);
      const { waitSeconds } = optionalBody(pollBodySchema, body);
      const task = await engine.pollTask(id, { waitSeconds, ...(signal === undefined ? {} : { signal }) });
      return task === undefined ? { status: 204, body: undefined } : { status: 200, body: task };
    },
    heartbeatTask: async ({ body }) => {
      const { taskToken } = validate(taskTokenBodySchema, parseJson(body, { required: true }));
      return { status: 200, body: await engine.heartbeatTask(checkToken("taskToken", taskToken)) };
    },
    completeTask: async ({ body }) => {
      const { taskToken, output } = validate(completeTaskBodySchema, parseJson(body, { required: true }));
      await engine.completeTask(checkToken("taskToken", taskToken), output ?? null);
      return { status: 202, body: ACCEPTED };
    },
    failTask: async ({ body }) => {
      const { taskToken, error } = validate(failTaskBodySchema, parseJson(body, { required: true }));
      await engine.failTask(checkToken("taskToken", taskToken), error);
      return { status: 202, body: ACCEPTED };
    },
    completeCallback: async ({ body }) => {
      const { token, output } = validate(completeCallbackBodySchema, parseJson(body, { required: true }));
      await engine.completeCallback(checkToken("token", token), output ?? null);
      return { status: 202, body: ACCEPTED };
    },
    failCallback: async ({ body }) => {
      const { token, error } = validate(failCallbackBodySchema, parseJson(body, { required: true }));
      await engine.failCallback(checkToken("token", token), error);
      return { status: 202, body: ACCEPTED };
    },
    heartbeatCallback: async ({ body }) => {
      const { token } = validate(callbackTokenBodySchema, parseJson(body, { required: true }));
      await engine.heartbeatCallback(checkToken("token", token));
      return { status: 202, body: ACCEPTED };
    },
  };
}
