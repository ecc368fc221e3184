/**
 * The construct and the functions agree on configuration: every variable the synthesized template
 * sets on a function is one the functions read (or the platform reads), and every variable the
 * functions read is one the construct sets, from a resource or from a prop, unless it is declared as
 * the environment's own (the AWS SDK's endpoint overrides). Both sides take their names from
 * shared/config/settings.ts; this checks that they use it, and that it is what loadConfig reads.
 * The stacks use pre-built inline code, so nothing is bundled.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Duration } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { describe, expect, it } from "vitest";
import { weftStackPropsFromContext } from "../../infra/lib/context.js";
import { REPO_ROOT, type WeftFunctionKind } from "../../infra/lib/functions.js";
import type { WeftStackProps } from "../../infra/lib/weft-stack.js";
import { loadConfig, loadEngineSettings } from "../../shared/config/env.js";
import {
  PLATFORM_VARIABLES,
  PROP_SETTING_KEYS,
  type PropSettingKey,
  SETTING_KEYS,
  SETTINGS,
} from "../../shared/config/settings.js";
import { engineOptionsFromConfig } from "../../shared/config/wiring.js";
import { KINDS, resource, type Synth, synthWeft } from "./fixture.js";

const inline = () => lambda.Code.fromInline("export const handler = async () => ({});");
const code: Record<WeftFunctionKind, lambda.Code> = {
  api: inline(),
  worker: inline(),
  sweeper: inline(),
  dlq: inline(),
};

const withCode = (props: WeftStackProps): WeftStackProps => ({ ...props, weft: { ...props.weft, code } });

/** A distinct value, valid for both the functions and the construct, for every setting a prop sets. */
const SAMPLE = Object.fromEntries(PROP_SETTING_KEYS.map((key, i) => [key, 11 + 2 * i])) as Record<
  PropSettingKey,
  number
>;
/** The sample of a list prop (the http task's allow-list): a value its schema accepts. */
const LIST_SAMPLE = "loopback,10.11.0.0/16";
const SAMPLE_CONTEXT = Object.fromEntries(
  PROP_SETTING_KEYS.map((key) => [
    SETTINGS[key].setBy.context,
    SETTINGS[key].setBy.propType === "list" ? LIST_SAMPLE : String(SAMPLE[key]),
  ]),
);

/** Every prop that sets a variable, set through the sample app's context as `cdk -c` would. */
const { stackName: _unused, ...everyProp } = weftStackPropsFromContext((key) => SAMPLE_CONTEXT[key]);

const defaults = synthWeft(withCode({}), "WeftDefaults");
const everything = synthWeft(withCode(everyProp), "WeftEverything");

function environmentOf(synth: Synth, kind: WeftFunctionKind): Record<string, unknown> {
  const properties = resource(synth.json, synth.functionId(kind)).Properties ?? {};
  return (properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

/** The template's values as the function would see them: a resource's reference becomes a name. */
function deployedEnv(variables: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map(([name, value]) => [
      name,
      typeof value === "string" ? value : `resolved-${name.toLowerCase()}`,
    ]),
  );
}

/** The names `load` reads from the environment it is given. */
function variablesRead(
  load: (env: Record<string, string | undefined>) => unknown,
  env: Record<string, string>,
) {
  const read = new Set<string>();
  const recording = new Proxy(env, {
    get(target, name) {
      if (typeof name === "string") read.add(name);
      return Reflect.get(target, name);
    },
  });
  load(recording);
  return read;
}

const runtimeNames = SETTING_KEYS.map((key) => SETTINGS[key].env);
const platformNames: string[] = Object.values(PLATFORM_VARIABLES).map((entry) => entry.env);
const constructSet = SETTING_KEYS.filter((key) => SETTINGS[key].setBy.kind !== "environment");
const environmentOnly = SETTING_KEYS.filter((key) => SETTINGS[key].setBy.kind === "environment");

describe("configuration: the construct and the functions agree (shared/config/settings.ts)", () => {
  it("loadConfig reads exactly the variables of the settings module, and loadEngineSettings a part of them", () => {
    const env = deployedEnv(environmentOf(everything, "worker"));
    expect([...variablesRead(loadConfig, env)].sort()).toEqual([...runtimeNames].sort());
    const engineReads = variablesRead(loadEngineSettings, env);
    expect(engineReads.size).toBeGreaterThan(0);
    for (const name of engineReads) expect(runtimeNames).toContain(name);
  });

  describe.each([
    ["with the defaults", defaults],
    ["with every prop set", everything],
  ] as const)("the template %s", (_label, synth) => {
    it.each(KINDS)("sets on %s only variables the functions or the platform read", (kind) => {
      const readByFunctions = variablesRead(loadConfig, deployedEnv(environmentOf(synth, kind)));
      for (const name of Object.keys(environmentOf(synth, kind))) {
        expect(readByFunctions.has(name) || platformNames.includes(name), `${name} is read by nothing`).toBe(
          true,
        );
      }
    });

    it.each(KINDS)("gives %s an environment the functions accept", (kind) => {
      expect(() => loadConfig(deployedEnv(environmentOf(synth, kind)))).not.toThrow();
    });

    it.each(KINDS)("never sets on %s what belongs to the environment (the SDK's endpoints)", (kind) => {
      const variables = environmentOf(synth, kind);
      for (const key of environmentOnly)
        expect(variables[SETTINGS[key].env], SETTINGS[key].env).toBeUndefined();
    });
  });

  it.each(KINDS)("can set on %s every variable the functions read, but the environment's own", (kind) => {
    const variables = environmentOf(everything, kind);
    for (const key of constructSet) expect(variables[SETTINGS[key].env], SETTINGS[key].env).toBeDefined();
    for (const name of platformNames) expect(variables[name], name).toBeDefined();
  });

  it("sets each resource's variable from that resource", () => {
    const weft = defaults.stack.weft;
    const resources = {
      table: weft.table,
      "task queue": weft.taskQueue,
      "event bus": weft.eventBus,
      "payload bucket": weft.payloadBucket,
    } as const;
    for (const kind of KINDS) {
      const variables = environmentOf(defaults, kind);
      for (const key of SETTING_KEYS) {
        const setBy = SETTINGS[key].setBy;
        if (setBy.kind !== "resource") continue;
        expect(variables[SETTINGS[key].env], key).toEqual({
          Ref: defaults.logicalId(resources[setBy.resource]),
        });
      }
    }
  });

  it("maps each context key to its prop, and each prop to its variable, as the module says", () => {
    for (const key of PROP_SETTING_KEYS) {
      const { prop, propType } = SETTINGS[key].setBy;
      const value = prop
        .split(".")
        .reduce<unknown>((at, name) => (at as Record<string, unknown>)?.[name], everyProp.weft);
      if (propType === "list") expect((value as string[]).join(","), prop).toBe(LIST_SAMPLE);
      else expect(propType === "duration" ? (value as Duration).toSeconds() : value, prop).toBe(SAMPLE[key]);
    }
    const config = loadConfig(deployedEnv(environmentOf(everything, "worker")));
    expect(engineOptionsFromConfig(config)).toMatchObject({
      leaseSeconds: SAMPLE.leaseSeconds,
      defaultMaxAttempts: SAMPLE.defaultMaxAttempts,
      workerTimeoutSeconds: SAMPLE.workerTimeoutSeconds,
      sweep: {
        firstCheckMs: SAMPLE.sweepFirstCheckSeconds * 1000,
        idleMs: SAMPLE.sweepIdleSeconds * 1000,
        graceMs: SAMPLE.sweepGraceSeconds * 1000,
      },
    });
    expect(config.retentionDays).toBe(SAMPLE.retentionDays);
  });

  it("tells the engine the worker function's own timeout", () => {
    const worker = (synth: Synth) => resource(synth.json, synth.functionId("worker")).Properties;
    for (const synth of [defaults, everything]) {
      expect(environmentOf(synth, "worker")[SETTINGS.workerTimeoutSeconds.env]).toBe(
        String(worker(synth)?.Timeout),
      );
    }
  });

  it("names platform variables that their readers really read", () => {
    for (const entry of Object.values(PLATFORM_VARIABLES)) {
      if (entry.readBy === "node") continue;
      const dir = path.join(REPO_ROOT, "node_modules", entry.readBy, "lib");
      const sources = readdirSync(dir, { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".js"))
        .map((file) => readFileSync(path.join(dir, file), "utf8"));
      expect(
        sources.some((text) => text.includes(`'${entry.env}'`) || text.includes(`"${entry.env}"`)),
        entry.env,
      ).toBe(true);
    }
  });

  it("refuses, at synthesis, a sweep timing the functions would refuse", () => {
    expect(() =>
      synthWeft(withCode({ weft: { sweep: { grace: Duration.days(2) } } }), "SweepTooLong"),
    ).toThrow(/sweep\.grace: must be at most 86400/);
    expect(() =>
      synthWeft(withCode({ weft: { sweep: { firstCheck: Duration.millis(1500) } } }), "SweepFraction"),
    ).toThrow(/whole number/);
    expect(() =>
      weftStackPropsFromContext((key) => (key === "weft:sweepIdleSeconds" ? "0" : undefined)),
    ).toThrow(/weft:sweepIdleSeconds: must be at least 1/);
  });
});
