import { describe, expect, it } from "vitest";
import { MalformedPathError, Router } from "../../functions/api/routes.js";

const router = new Router<string>([
  { method: "POST", pattern: "/workflows", handler: "register" },
  { method: "GET", pattern: "/workflows/{name}", handler: "getWorkflow" },
  { method: "POST", pattern: "/executions", handler: "create" },
  { method: "GET", pattern: "/executions/{id}", handler: "describe" },
  { method: "POST", pattern: "/executions/{id}/trigger", handler: "trigger" },
]);

describe("api route table", () => {
  it("matches literal paths and path parameters by method", () => {
    const found = router.match("POST", "/executions/ex-1/trigger");
    expect(found).toMatchObject({ kind: "found", route: { handler: "trigger" }, params: { id: "ex-1" } });
    expect(router.match("GET", "/executions/ex-1")).toMatchObject({ kind: "found", params: { id: "ex-1" } });
    expect(router.match("post", "/workflows")).toMatchObject({
      kind: "found",
      route: { handler: "register" },
    });
  });

  it("decodes percent-encoded parameters and ignores one trailing slash", () => {
    expect(router.match("GET", "/workflows/nightly%2Detl/")).toMatchObject({
      kind: "found",
      params: { name: "nightly-etl" },
    });
  });

  it("answers method-not-allowed with the methods the path has", () => {
    expect(router.match("DELETE", "/executions/ex-1")).toEqual({
      kind: "method-not-allowed",
      allowed: ["GET"],
    });
    expect(router.match("GET", "/workflows")).toEqual({ kind: "method-not-allowed", allowed: ["POST"] });
  });

  it("answers not-found for unknown paths, extra segments and empty parameters", () => {
    expect(router.match("GET", "/nope")).toEqual({ kind: "not-found" });
    expect(router.match("GET", "/executions/ex-1/trigger/again")).toEqual({ kind: "not-found" });
    expect(router.match("GET", "/executions//trigger")).toEqual({ kind: "not-found" });
    expect(router.match("GET", "/")).toEqual({ kind: "not-found" });
  });

  it("refuses malformed percent-encoding", () => {
    expect(() => router.match("GET", "/executions/%E0%A4%A")).toThrow(MalformedPathError);
  });
});
