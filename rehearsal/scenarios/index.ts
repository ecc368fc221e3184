/** The scenarios, in the order they run. */
import { callbackTimeoutScenario } from "./callback-timeout.js";
import { cancelScenario } from "./cancel.js";
import type { Scenario } from "./context.js";
import { continuationScenario } from "./continuation.js";
import { crashScenario } from "./crash.js";
import { customTaskScenario } from "./custom-task.js";
import { diamondScenario } from "./diamond.js";
import { fanOutReleaseScenario } from "./fan-out-release.js";
import { gatewayScenario } from "./gateway.js";
import { hostileScenario } from "./hostile.js";
import { idempotencyScenario } from "./idempotency.js";
import { languageScenario } from "./language.js";
import { listingScenario } from "./listing.js";
import { longWaitScenario } from "./long-wait.js";
import { payloadScenario } from "./payload.js";
import { poisonScenario } from "./poison.js";
import { poisonCrashScenario } from "./poison-crash.js";
import { poisonItemScenario } from "./poison-item.js";
import { propagationScenario } from "./propagation.js";
import { terminalFailureScenario } from "./terminal-failure.js";
import { twoStepScenario } from "./two-step.js";
import { workersScenario } from "./workers.js";
import { registerScenario } from "./workflows.js";

export const SCENARIOS: readonly Scenario[] = [
  gatewayScenario,
  registerScenario,
  diamondScenario,
  twoStepScenario,
  idempotencyScenario,
  customTaskScenario,
  listingScenario,
  continuationScenario,
  cancelScenario,
  terminalFailureScenario,
  poisonScenario,
  poisonCrashScenario,
  poisonItemScenario,
  crashScenario,
  propagationScenario,
  payloadScenario,
  languageScenario,
  hostileScenario,
  fanOutReleaseScenario,
  workersScenario,
  callbackTimeoutScenario,
  // Last: it moves the functions' clock (lambda/clock.ts), which leaves the timers' cursor ahead.
  longWaitScenario,
];
