/**
 * The `http` task's egress policy from configuration: WEFT_HTTP_ALLOW (settings.ts) when set, else
 * the runtime's default (deployed: public addresses only; `npm start`: loopback too). The api checks
 * registrations and the worker checks connections with the same list, read from the same variable.
 */
import { type EgressAllow, type EgressPolicy, type EgressRuntime, egressPolicy } from "../tasks/egress.js";
import { readSettings, SETTINGS } from "./settings.js";

const { env, setBy } = SETTINGS.httpAllow;

/** How the allow-list is configured, for the http task's messages. */
export const HTTP_ALLOW_SETTING = `${env} (deployed: the WeftOrchestrator prop ${setBy.prop}, CDK context ${setBy.context})`;

/** The policy for an allow-list already read (WeftConfig.httpAllow) in a runtime. */
export function httpEgressPolicy(allow: EgressAllow | undefined, runtime: EgressRuntime): EgressPolicy {
  return egressPolicy(allow, runtime, HTTP_ALLOW_SETTING);
}

/** The local runtime's policy: WEFT_HTTP_ALLOW from `env` (validated as the functions read it), else loopback. */
export function localEgressPolicy(
  environment: Record<string, string | undefined> = process.env,
): EgressPolicy {
  return httpEgressPolicy(readSettings(environment, ["httpAllow"]).httpAllow, "local");
}
