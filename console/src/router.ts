/** Hash routing: `#/workflows`, `#/workflows/NAME?version=N`, `#/executions?…`, `#/executions/ID?node=N`, `#/dlq`. */
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "workflows" }
  | { page: "workflow"; name: string; version?: number }
  | { page: "executions"; workflow?: string; status?: string }
  | { page: "execution"; id: string; node?: string }
  | { page: "dlq" };

export function parseHash(hash: string): Route {
  const text = hash.replace(/^#/, "");
  const [pathPart = "", queryPart = ""] = text.split("?", 2);
  const parts = pathPart
    .split("/")
    .filter((part) => part !== "")
    .map(decodeURIComponent);
  const query = new URLSearchParams(queryPart);
  const get = (key: string) => query.get(key) ?? undefined;
  const [first, second] = parts;
  if (first === "workflows" && second !== undefined) {
    const version = Number(get("version"));
    return {
      page: "workflow",
      name: second,
      ...(Number.isInteger(version) && version > 0 ? { version } : {}),
    };
  }
  if (first === "executions" && second !== undefined) {
    const node = get("node");
    return { page: "execution", id: second, ...(node === undefined ? {} : { node }) };
  }
  if (first === "executions") {
    const workflow = get("workflow");
    const status = get("status");
    return {
      page: "executions",
      ...(workflow === undefined ? {} : { workflow }),
      ...(status === undefined ? {} : { status }),
    };
  }
  if (first === "dlq") return { page: "dlq" };
  return { page: "workflows" };
}

export function href(route: Route): string {
  const query = (entries: Record<string, string | number | undefined>) => {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(entries))
      if (value !== undefined) search.set(key, String(value));
    const text = search.toString();
    return text === "" ? "" : `?${text}`;
  };
  switch (route.page) {
    case "workflows":
      return "#/workflows";
    case "workflow":
      return `#/workflows/${encodeURIComponent(route.name)}${query({ version: route.version })}`;
    case "executions":
      return `#/executions${query({ workflow: route.workflow, status: route.status })}`;
    case "execution":
      return `#/executions/${encodeURIComponent(route.id)}${query({ node: route.node })}`;
    case "dlq":
      return "#/dlq";
  }
}

export function navigate(route: Route, options: { replace?: boolean } = {}): void {
  const target = href(route);
  if (options.replace) window.history.replaceState(null, "", target);
  else window.history.pushState(null, "", target);
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    const update = () => setRoute(parseHash(window.location.hash));
    window.addEventListener("hashchange", update);
    window.addEventListener("popstate", update);
    return () => {
      window.removeEventListener("hashchange", update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return route;
}
