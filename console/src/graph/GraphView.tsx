/**
 * The DAG drawn in SVG. The DOM of the graph is built once per layout (imperatively, outside Preact's
 * diffing): each poll only sets the `data-state` (and the attempt line) of the nodes whose state
 * changed, so a 2,000-node execution re-renders nothing but what moved. Pan by dragging, zoom with
 * the wheel or the buttons; a node is selected by click, Enter or Space.
 */
import { useEffect, useRef } from "preact/hooks";
import { displayState, type NodeView } from "../api.js";
import type { Layout } from "./layout.js";

const SVG = "http://www.w3.org/2000/svg";
const PAD = 24;
/** Below this zoom the labels are unreadable: nodes are drawn as coloured blocks. */
const FAR = 0.3;
let sceneCount = 0;

interface NodeElement {
  g: SVGGElement;
  sub: SVGTextElement;
  type: string;
  /** The state last drawn (status, attempt, map progress). */
  key: string;
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number> = {},
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

class Scene {
  readonly svg: SVGSVGElement;
  private readonly viewport: SVGGElement;
  private readonly nodes = new Map<string, NodeElement>();
  private readonly edgesOf = new Map<string, SVGPathElement[]>();
  private view = { x: 0, y: 0, k: 1 };
  private selected: string | undefined;
  /** Fitted to the frame until the user pans or zooms: then a resize keeps their view. */
  private fitted = true;
  private readonly cleanup: Array<() => void> = [];

  constructor(
    private readonly host: HTMLElement,
    private readonly layout: Layout,
    private readonly onSelect: (id: string) => void,
  ) {
    const marker = `weft-arrow-${++sceneCount}`;
    const large = layout.nodes.length > 300;
    this.svg = svg("svg", {
      class: large ? "graph-svg large" : "graph-svg",
      "data-testid": "graph",
      "data-node-count": layout.nodes.length,
      "data-layout-ms": layout.ms,
      role: "group",
      "aria-label": `workflow graph of ${layout.nodes.length} nodes`,
    });
    const defs = svg("defs");
    const arrow = svg("marker", {
      id: marker,
      viewBox: "0 0 10 10",
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto-start-reverse",
    });
    arrow.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }));
    defs.append(arrow);
    this.viewport = svg("g", { class: "viewport" });
    const edges = svg("g", { class: "edges" });
    for (const edge of layout.edges) {
      const [x0 = 0, y0 = 0, ...rest] = edge.points;
      let d = `M${x0} ${y0}`;
      for (let i = 0; i + 1 < rest.length; i += 2) d += `L${rest[i]} ${rest[i + 1]}`;
      const condition = edge.catches;
      const path = svg("path", {
        d,
        class: condition ? `edge catch-${condition.on}` : "edge",
        "marker-end": `url(#${marker})`,
        "data-edge": `${edge.from}->${edge.to}`,
        ...(condition ? { "data-on": condition.on } : {}),
      });
      edges.append(path);
      if (condition) {
        // A catch edge says when it is taken, by its target's end of the route (its last segment).
        const label = `on ${condition.on}${condition.errors ? `: ${condition.errors.join(", ")}` : ""}`;
        const n = edge.points.length;
        const [ax = 0, ay = 0, bx = 0, by = 0] = edge.points.slice(Math.max(0, n - 4));
        const text = svg("text", {
          class: `edge-label catch-${condition.on}`,
          x: (ax + bx) / 2 + 4,
          y: (ay + by) / 2,
          "data-edge-label": `${edge.from}->${edge.to}`,
        });
        text.textContent = label;
        edges.append(text);
        const title = svg("title", {});
        title.textContent = `${edge.to} runs ${label} of ${edge.from}`;
        path.append(title);
      }
      for (const end of [edge.from, edge.to]) {
        const list = this.edgesOf.get(end) ?? [];
        list.push(path);
        this.edgesOf.set(end, list);
      }
    }
    const nodes = svg("g", { class: "nodes" });
    for (const box of layout.nodes) {
      const g = svg("g", {
        class: "node",
        transform: `translate(${box.x} ${box.y})`,
        "data-testid": `node-${box.id}`,
        "data-node-id": box.id,
        "data-state": "PENDING",
        role: "button",
        tabindex: 0,
        "aria-label": `${box.id} (${box.type})`,
      });
      const title = svg("title");
      title.textContent = `${box.id} (${box.type})`;
      const label = svg("text", { class: "node-id", x: 12, y: 19 });
      label.textContent = shorten(box.id, 20);
      const sub = svg("text", { class: "node-sub", x: 12, y: 35 });
      sub.textContent = shorten(box.type, 24);
      g.append(
        title,
        svg("rect", { width: box.width, height: box.height, rx: 6 }),
        svg("rect", { class: "stripe", width: 5, height: box.height, rx: 2 }),
        label,
        sub,
      );
      nodes.append(g);
      this.nodes.set(box.id, { g, sub, type: box.type, key: "" });
    }
    this.viewport.append(edges, nodes);
    this.svg.append(defs, this.viewport);
    host.append(this.svg);
    this.listen(nodes);
    this.fit();
    // The frame narrows when a node's panel opens: keep a fitted graph fitted.
    const resized = new ResizeObserver(() => {
      if (this.fitted) this.fit();
    });
    resized.observe(host);
    this.cleanup.push(() => resized.disconnect());
  }

  /** Draws the nodes' states: only those that changed since the last call are touched. */
  update(states: readonly NodeView[] | undefined): void {
    if (states === undefined) return;
    const started = performance.now();
    for (const state of states) {
      const node = this.nodes.get(state.id);
      if (node === undefined) continue;
      const items = state.items;
      const shown = displayState(state);
      const key = `${shown}|${state.attempt}|${items ? `${items.completed}/${items.failed}/${items.total}` : ""}`;
      if (key === node.key) continue;
      node.key = key;
      node.g.setAttribute("data-state", shown);
      node.g.setAttribute("data-attempt", String(state.attempt));
      node.g.setAttribute("aria-label", `${state.id} (${node.type}): ${shown}, attempt ${state.attempt}`);
      const extra = [
        state.attempt > 1 ? `attempt ${state.attempt}` : "",
        items
          ? `${items.completed}/${items.total}${items.failed > 0 ? ` · ${items.failed} failed` : ""}`
          : "",
      ].filter((part) => part !== "");
      node.sub.textContent = shorten([node.type, ...extra].join(" · "), 26);
    }
    this.svg.setAttribute("data-update-ms", (performance.now() - started).toFixed(1));
  }

  select(id: string | undefined): void {
    if (id === this.selected) return;
    if (this.selected !== undefined) {
      this.nodes.get(this.selected)?.g.classList.remove("selected");
      for (const path of this.edgesOf.get(this.selected) ?? []) path.classList.remove("hl");
    }
    this.selected = id;
    if (id === undefined) return;
    this.nodes.get(id)?.g.classList.add("selected");
    for (const path of this.edgesOf.get(id) ?? []) path.classList.add("hl");
  }

  /** Brings a node into view (when selected from elsewhere). */
  reveal(id: string): void {
    const box = this.layout.nodes.find((node) => node.id === id);
    if (box === undefined) return;
    const { width, height } = this.host.getBoundingClientRect();
    const k = Math.max(this.view.k, 0.6);
    this.view = {
      k,
      x: width / 2 - (box.x + box.width / 2) * k,
      y: height / 2 - (box.y + box.height / 2) * k,
    };
    this.fitted = false;
    this.apply();
  }

  fit(): void {
    const { width, height } = this.host.getBoundingClientRect();
    const w = Math.max(1, width || 800);
    const h = Math.max(1, height || 500);
    const k = Math.min(
      1,
      (w - PAD * 2) / Math.max(1, this.layout.width),
      (h - PAD * 2) / Math.max(1, this.layout.height),
    );
    this.view = {
      k,
      x: (w - this.layout.width * k) / 2,
      y: Math.max(PAD, (h - this.layout.height * k) / 2),
    };
    this.fitted = true;
    this.apply();
  }

  zoom(factor: number, cx?: number, cy?: number): void {
    const { width, height } = this.host.getBoundingClientRect();
    const x = cx ?? width / 2;
    const y = cy ?? height / 2;
    const k = Math.min(3, Math.max(0.02, this.view.k * factor));
    const ratio = k / this.view.k;
    this.view = { k, x: x - (x - this.view.x) * ratio, y: y - (y - this.view.y) * ratio };
    this.fitted = false;
    this.apply();
  }

  destroy(): void {
    for (const undo of this.cleanup) undo();
    this.svg.remove();
  }

  private apply(): void {
    this.viewport.setAttribute("transform", `translate(${this.view.x} ${this.view.y}) scale(${this.view.k})`);
    // Far out, nodes are dots: filled with their state's colour, without text.
    this.svg.classList.toggle("far", this.view.k < FAR);
  }

  private on<K extends keyof SVGElementEventMap>(
    target: SVGElement,
    type: K,
    listener: (event: SVGElementEventMap[K]) => void,
    options?: AddEventListenerOptions,
  ): void {
    target.addEventListener(type, listener as EventListener, options);
    this.cleanup.push(() => target.removeEventListener(type, listener as EventListener, options));
  }

  private listen(nodes: SVGGElement): void {
    const nodeOf = (target: EventTarget | null) =>
      target instanceof Element
        ? (target.closest("g.node")?.getAttribute("data-node-id") ?? undefined)
        : undefined;
    let drag: { x: number; y: number; moved: boolean } | undefined;
    this.on(nodes, "click", (event) => {
      const id = nodeOf(event.target);
      if (id !== undefined && !drag?.moved) this.onSelect(id);
    });
    this.on(nodes, "keydown", (event) => {
      const id = nodeOf(event.target);
      if (id !== undefined && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        this.onSelect(id);
      }
    });
    this.on(
      this.svg,
      "wheel",
      (event) => {
        event.preventDefault();
        const rect = this.svg.getBoundingClientRect();
        this.zoom(Math.exp(-event.deltaY * 0.0015), event.clientX - rect.left, event.clientY - rect.top);
      },
      { passive: false },
    );
    this.on(this.svg, "pointerdown", (event) => {
      if (event.button !== 0) return;
      drag = { x: event.clientX, y: event.clientY, moved: false };
    });
    this.on(this.svg, "pointermove", (event) => {
      if (drag === undefined || (event.buttons & 1) === 0) return;
      const dx = event.clientX - drag.x;
      const dy = event.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!drag.moved) this.svg.setPointerCapture(event.pointerId);
      drag.moved = true;
      drag.x = event.clientX;
      drag.y = event.clientY;
      this.view = { ...this.view, x: this.view.x + dx, y: this.view.y + dy };
      this.fitted = false;
      this.apply();
    });
    const end = () => {
      // Let the click that ends a drag see it was one, then forget it.
      setTimeout(() => {
        drag = undefined;
      }, 0);
    };
    this.on(this.svg, "pointerup", end);
    this.on(this.svg, "pointercancel", end);
  }
}

export interface GraphViewProps {
  layout: Layout;
  /** The execution's nodes (undefined: a definition, every node drawn as not run). */
  states?: readonly NodeView[] | undefined;
  selected?: string | undefined;
  onSelect?: (id: string) => void;
}

export function GraphView({ layout, states, selected, onSelect }: GraphViewProps) {
  const host = useRef<HTMLDivElement>(null);
  const scene = useRef<Scene | undefined>(undefined);
  const select = useRef(onSelect);
  select.current = onSelect;

  useEffect(() => {
    if (host.current === null) return;
    const created = new Scene(host.current, layout, (id) => select.current?.(id));
    scene.current = created;
    return () => {
      created.destroy();
      scene.current = undefined;
    };
  }, [layout]);
  useEffect(() => {
    scene.current?.update(states);
  }, [states, layout]);
  useEffect(() => {
    scene.current?.select(selected);
  }, [selected, layout]);

  // A small graph gets a frame its size; a large one most of the window.
  const frameHeight = `min(70vh, ${Math.max(260, Math.round(layout.height) + 2 * PAD + 40)}px)`;
  return (
    <div class="graph-frame" style={{ height: frameHeight }}>
      <div class="graph-host" ref={host} />
      <div class="graph-tools" role="toolbar" aria-label="graph view">
        <button type="button" title="Zoom in" aria-label="Zoom in" onClick={() => scene.current?.zoom(1.25)}>
          +
        </button>
        <button type="button" title="Zoom out" aria-label="Zoom out" onClick={() => scene.current?.zoom(0.8)}>
          −
        </button>
        <button
          type="button"
          title="Fit to view"
          aria-label="Fit to view"
          onClick={() => scene.current?.fit()}
        >
          ⤢
        </button>
      </div>
      <Legend />
    </div>
  );
}

const LEGEND = ["PENDING", "QUEUED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "SKIPPED"];

function Legend() {
  return (
    <ul class="legend" aria-label="node states">
      {LEGEND.map((state) => (
        <li key={state} data-state={state}>
          <span class="swatch" />
          {state.toLowerCase()}
        </li>
      ))}
    </ul>
  );
}

export { Scene as GraphScene };
