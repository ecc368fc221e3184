import { startLocalRuntime } from "/work/main/local/runtime.js";
const backend = (process.argv[2] ?? "memory") as "memory" | "aws";
const rt = await startLocalRuntime({ backend, port: 0, endpoint: process.argv[3], names: { table: `t${Date.now()}`, queue: `q${Date.now()}`, deadLetter: `d${Date.now()}`, eventBus: `b${Date.now()}` } });
console.log(rt.url, rt.resources);
const post = (p: string, b: unknown) => fetch(rt.url + p, { method: "POST", body: JSON.stringify(b) }).then(async (r) => [r.status, await r.json()]);
console.log(await post("/workflows", { name: "d", nodes: [{ id: "a", type: "pass", params: { value: 1 } }, { id: "b", type: "sleep", params: { ms: 300 }, dependsOn: ["a"] }, { id: "c", type: "sleep", params: { ms: 300 }, dependsOn: ["a"] }, { id: "d", type: "merge", dependsOn: ["b", "c"] }] }));
const [, ex] = (await post("/executions", { workflow: "d", input: { x: 1 } })) as [number, { executionId: string }];
const t0 = Date.now();
for (;;) {
  const v = await (await fetch(`${rt.url}/executions/${ex.executionId}`)).json();
  if (v.status !== "RUNNING") { console.log(Date.now() - t0, "ms", JSON.stringify(v.status), JSON.stringify(v.output), v.nodes.map((n: { id: string; status: string }) => `${n.id}:${n.status}`).join(" ")); break; }
  await new Promise((r) => setTimeout(r, 50));
}
const s0 = Date.now();
await rt.stop();
console.log("stopped in", Date.now() - s0);
