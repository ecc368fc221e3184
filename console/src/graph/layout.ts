/**
 * The DAG's layout, by elkjs (the layered algorithm) in a Web Worker so that a 2,000-node graph
 * never freezes the page. A definition is laid out once: the result is kept by workflow, version
 * and definition hash — in memory, and in localStorage for the next visits (the latest few) — and
 * every poll of an execution reuses it (only the nodes' states change).
 */
import ElkConstructor, {
  type ELK,
  type ElkExtendedEdge,
  type ElkNode,
  type LayoutOptions,
} from "elkjs/lib/elk-api.js";
import elkWorkerUrl from "elkjs/lib/elk-worker.min.js?url";
import { type CatchCondition, edgeConditions, type WorkflowDefinition } from "../api.js";

export const NODE_WIDTH = 168;
export const NODE_HEIGHT = 44;

export interface NodeBox {
  id: string;
  type: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface EdgePath {
  from: string;
  to: string;
  /** A catch edge's condition (its dependant runs on the source's failure, or its end either way). */
  catches?: CatchCondition;
  /** x0, y0, x1, y1, …: the route from the source's bottom to the target's top. */
  points: number[];
}

export interface Layout {
  width: number;
  height: number;
  nodes: NodeBox[];
  edges: EdgePath[];
  /** How long the layout took (ms), for the page to show. */
  ms: number;
  /** Read back from localStorage (laid out on an earlier visit). */
  cached?: boolean;
}

/** Above this many nodes, speed over finesse: fewer crossing-minimisation passes, straight routes. */
const LARGE_GRAPH = 300;

function optionsFor(nodeCount: number): LayoutOptions {
  const common: LayoutOptions = {
    "elk.algorithm": "layered",
    "elk.direction": "DOWN",
    "elk.spacing.nodeNode": "28",
    "elk.layered.spacing.nodeNodeBetweenLayers": "48",
    "elk.layered.spacing.edgeNodeBetweenLayers": "16",
  };
  if (nodeCount <= LARGE_GRAPH) {
    // Siblings in the definition's order, as its author wrote them.
    return {
      ...common,
      "elk.edgeRouting": "ORTHOGONAL",
      "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
    };
  }
  // Measured on a random 2,000-node DAG (40 layers of 50): ~11 s and 46,000 px wide with the
  // defaults; ~4 s and 9,800 px with these. The routes are not used (layers are compacted after).
  return {
    ...common,
    "elk.edgeRouting": "POLYLINE",
    "elk.layered.thoroughness": "1",
    "elk.layered.nodePlacement.strategy": "SIMPLE",
    "elk.layered.crossingMinimization.greedySwitch.type": "OFF",
    "elk.separateConnectedComponents": "false",
  };
}

/** A large graph's overview (compacted): between two rows, between two nodes, nodes in a row at most. */
const LAYER_GAP = 56;
const NODE_GAP = 28;
const MAX_ROW = 50;

let elk: ELK | undefined;
function engine(): ELK {
  elk ??= new ElkConstructor({ workerFactory: () => new Worker(elkWorkerUrl) });
  return elk;
}

const cache = new Map<string, Promise<Layout>>();

/** The layout of `definition`, computed once per `key` (workflow, version and definition hash). */
export function layoutFor(key: string, definition: WorkflowDefinition): Promise<Layout> {
  let layout = cache.get(key);
  if (layout === undefined) {
    const kept = readStored(key);
    layout =
      kept === undefined
        ? computeLayout(definition).then((computed) => {
            writeStored(key, computed);
            return computed;
          })
        : Promise.resolve(kept);
    cache.set(key, layout);
    // A failed layout is not kept: the next visit tries again.
    layout.catch(() => cache.delete(key));
  }
  return layout;
}

// v3: edges carry their catch conditions.
const STORED_PREFIX = "weft.layout.v3:";
const STORED_INDEX = "weft.layout.v2";
/** Layouts kept in localStorage, the most recently made last (a 2,000-node one is ~400 KB). */
const STORED_MAX = 8;

function readStored(key: string): Layout | undefined {
  try {
    const text = window.localStorage.getItem(STORED_PREFIX + key);
    return text === null ? undefined : { ...(JSON.parse(text) as Layout), cached: true };
  } catch {
    return undefined;
  }
}

/** Best effort: the oldest layouts make room; a full or disabled storage only costs the next visit a layout. */
function writeStored(key: string, layout: Layout): void {
  try {
    const storage = window.localStorage;
    const index = (JSON.parse(storage.getItem(STORED_INDEX) ?? "[]") as string[]).filter((k) => k !== key);
    index.push(key);
    const text = JSON.stringify(layout);
    for (;;) {
      while (index.length > STORED_MAX) storage.removeItem(STORED_PREFIX + (index.shift() as string));
      try {
        storage.setItem(STORED_PREFIX + key, text);
        storage.setItem(STORED_INDEX, JSON.stringify(index));
        return;
      } catch {
        if (index.length <= 1) return;
        storage.removeItem(STORED_PREFIX + (index.shift() as string));
      }
    }
  } catch {
    // No storage (private mode, disabled): the in-memory cache still holds it for this visit.
  }
}

async function computeLayout(definition: WorkflowDefinition): Promise<Layout> {
  const started = performance.now();
  const ids = new Set(definition.nodes.map((node) => node.id));
  const edges: ElkExtendedEdge[] = [];
  // By ELK edge id: the catch edges' conditions, drawn apart from plain (success) edges.
  const catches = new Map<string, CatchCondition>();
  for (const node of definition.nodes) {
    for (const { from, condition } of edgeConditions(node)) {
      if (!ids.has(from)) continue;
      const id = `${edges.length}`;
      edges.push({ id, sources: [from], targets: [node.id] });
      if (condition) catches.set(id, condition);
    }
  }
  const graph: ElkNode = {
    id: "root",
    layoutOptions: optionsFor(definition.nodes.length),
    children: definition.nodes.map((node) => ({ id: node.id, width: NODE_WIDTH, height: NODE_HEIGHT })),
    edges,
  };
  const result = await engine().layout(graph);
  const types = new Map(definition.nodes.map((node) => [node.id, node.type]));
  const nodes: NodeBox[] = (result.children ?? []).map((child) => ({
    id: child.id,
    type: types.get(child.id) ?? "",
    x: child.x ?? 0,
    y: child.y ?? 0,
    width: child.width ?? NODE_WIDTH,
    height: child.height ?? NODE_HEIGHT,
  }));
  if (definition.nodes.length > LARGE_GRAPH) return compacted(nodes, edges, catches, started);
  const paths: EdgePath[] = (result.edges ?? []).flatMap((edge) => {
    const section = edge.sections?.[0];
    const from = edge.sources[0];
    const to = edge.targets[0];
    if (section === undefined || from === undefined || to === undefined) return [];
    const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].flatMap((p) => [
      p.x,
      p.y,
    ]);
    return [withCondition({ from, to, points }, catches.get(edge.id))];
  });
  return {
    width: result.width ?? 0,
    height: result.height ?? 0,
    nodes,
    edges: paths,
    ms: Math.round(performance.now() - started),
  };
}

function withCondition(path: EdgePath, condition: CatchCondition | undefined): EdgePath {
  return condition === undefined ? path : { ...path, catches: condition };
}

/**
 * A large graph as an overview: ELK's layers (in its order, which minimises crossings) become rows
 * LAYER_GAP apart, a layer wider than MAX_ROW nodes wraps onto several rows (a fan-out of 2,000 is
 * 40 rows of 50, not one row 400,000 px long), every row centred; edges go straight from a node's
 * bottom to its dependant's top (ELK leaves room for hundreds of routes between two layers).
 */
function compacted(
  nodes: NodeBox[],
  edges: ElkExtendedEdge[],
  catches: ReadonlyMap<string, CatchCondition>,
  started: number,
): Layout {
  const layers = new Map<number, NodeBox[]>();
  for (const node of nodes) {
    const layer = layers.get(node.y) ?? [];
    layer.push(node);
    layers.set(node.y, layer);
  }
  const ordered = [...layers.entries()].sort(([a], [b]) => a - b).map(([, layer]) => layer);
  const step = NODE_WIDTH + NODE_GAP;
  const columns = Math.min(MAX_ROW, Math.max(...ordered.map((layer) => layer.length)));
  const width = columns * step - NODE_GAP;
  let row = 0;
  for (const layer of ordered) {
    layer.sort((a, b) => a.x - b.x);
    for (let start = 0; start < layer.length; start += MAX_ROW, row++) {
      const slice = layer.slice(start, start + MAX_ROW);
      const offset = (width - (slice.length * step - NODE_GAP)) / 2;
      slice.forEach((node, index) => {
        node.x = offset + index * step;
        node.y = row * (NODE_HEIGHT + LAYER_GAP);
      });
    }
  }
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const paths: EdgePath[] = edges.flatMap((edge) => {
    const from = byId.get(edge.sources[0] ?? "");
    const to = byId.get(edge.targets[0] ?? "");
    if (from === undefined || to === undefined) return [];
    return [
      withCondition(
        {
          from: from.id,
          to: to.id,
          points: [from.x + from.width / 2, from.y + from.height, to.x + to.width / 2, to.y],
        },
        catches.get(edge.id),
      ),
    ];
  });
  return {
    width,
    height: Math.max(0, row * (NODE_HEIGHT + LAYER_GAP) - LAYER_GAP),
    nodes,
    edges: paths,
    ms: Math.round(performance.now() - started),
  };
}
