/** The real clock and id generator. */
import { randomUUID } from "node:crypto";
import type { Clock, IdGenerator } from "../ports.js";

function abortError(): DOMException {
  return new DOMException("The operation was aborted", "AbortError");
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError());
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortError());
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

export const randomIds: IdGenerator = {
  executionId: () => randomUUID(),
  token: () => randomUUID(),
  random: () => Math.random(),
};
