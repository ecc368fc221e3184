import { describe, expect, it } from "vitest";
import {
  EXECUTION_STATUSES,
  type ExecutionStatus,
  NODE_STATUSES,
  type NodeStatus,
} from "../../shared/domain/records.js";
import {
  canTransitionExecution,
  canTransitionNode,
  EXECUTION_TRANSITIONS,
  executionStatesFrom,
  isTerminalExecution,
  isTerminalNode,
  NODE_TRANSITIONS,
  nodeStatesFrom,
} from "../../shared/domain/states.js";

const NODE_ALLOWED = new Set([
  "PENDING→QUEUED",
  "PENDING→RUNNING", // a direct node, claimed straight from PENDING
  "PENDING→CANCELLED",
  "PENDING→COMPLETED", // an inline node, run the moment it is decided
  "PENDING→FAILED", // an inline node whose run failed; a direct node dead-lettered before its claim
  "QUEUED→RUNNING",
  "QUEUED→CANCELLED",
  "QUEUED→FAILED",
  "QUEUED→COMPLETED",
  "RUNNING→COMPLETED",
  "RUNNING→FAILED",
  "RUNNING→CANCELLED",
  "RUNNING→QUEUED",
  "PENDING→SKIPPED", // skipped by its dependencies, or an inline node whose `when` is false
  "QUEUED→SKIPPED", // an inline node queued first whose `when` is false
  "RUNNING→SKIPPED", // claimed, then found with nothing to run (`when`, or every input skipped)
]);

const EXECUTION_ALLOWED = new Set([
  "PENDING→RUNNING",
  "PENDING→CANCELLED",
  "RUNNING→SUCCEEDED",
  "RUNNING→FAILED",
  "RUNNING→CANCELLED",
]);

const pairs = <S extends string>(statuses: readonly S[]) =>
  statuses.flatMap((from) => statuses.map((to) => [from, to] as [S, S]));

describe("node transitions", () => {
  it.each(pairs<NodeStatus>(NODE_STATUSES))("%s → %s", (from, to) => {
    expect(canTransitionNode(from, to)).toBe(NODE_ALLOWED.has(`${from}→${to}`));
  });

  it.each([
    ["FAILED", "QUEUED"],
    ["COMPLETED", "RUNNING"],
    ["CANCELLED", "PENDING"],
    ["COMPLETED", "QUEUED"],
  ] as const)("notably refuses %s → %s", (from, to) => {
    expect(canTransitionNode(from, to)).toBe(false);
  });

  it("terminal statuses are exactly COMPLETED, FAILED, CANCELLED, SKIPPED", () => {
    expect(NODE_STATUSES.filter(isTerminalNode)).toEqual(["COMPLETED", "FAILED", "CANCELLED", "SKIPPED"]);
  });

  it.each([
    ["PENDING", []],
    ["QUEUED", ["PENDING", "RUNNING"]],
    ["RUNNING", ["PENDING", "QUEUED"]],
    ["COMPLETED", ["PENDING", "QUEUED", "RUNNING"]],
    ["FAILED", ["PENDING", "QUEUED", "RUNNING"]],
    ["CANCELLED", ["PENDING", "QUEUED", "RUNNING"]],
    ["SKIPPED", ["PENDING", "QUEUED", "RUNNING"]],
  ] as const)("nodeStatesFrom(%s) = %j", (to, expected) => {
    expect(nodeStatesFrom(to)).toEqual(expected);
  });

  it("the table is read-only", () => {
    expect(Object.isFrozen(NODE_TRANSITIONS)).toBe(true);
    expect(Object.isFrozen(NODE_TRANSITIONS.RUNNING)).toBe(true);
  });
});

describe("execution transitions", () => {
  it.each(pairs<ExecutionStatus>(EXECUTION_STATUSES))("%s → %s", (from, to) => {
    expect(canTransitionExecution(from, to)).toBe(EXECUTION_ALLOWED.has(`${from}→${to}`));
  });

  it("terminal statuses are exactly SUCCEEDED, FAILED, CANCELLED", () => {
    expect(EXECUTION_STATUSES.filter(isTerminalExecution)).toEqual(["SUCCEEDED", "FAILED", "CANCELLED"]);
  });

  it.each([
    ["PENDING", []],
    ["RUNNING", ["PENDING"]],
    ["SUCCEEDED", ["RUNNING"]],
    ["FAILED", ["RUNNING"]],
    ["CANCELLED", ["PENDING", "RUNNING"]],
  ] as const)("executionStatesFrom(%s) = %j", (to, expected) => {
    expect(executionStatesFrom(to)).toEqual(expected);
  });

  it("the table is read-only", () => {
    expect(Object.isFrozen(EXECUTION_TRANSITIONS)).toBe(true);
    expect(Object.isFrozen(EXECUTION_TRANSITIONS.PENDING)).toBe(true);
  });
});
