/**
 * The browser for the console's tests: Debian's Chromium (`apt-get install chromium`; WEFT_CHROMIUM
 * names another executable) driven by playwright-core, headless. And what the tests read off a page:
 * the graph's node states, waited on by progress (test/support/progress.ts), never by fixed budgets.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { waitForProgress } from "../support/progress.js";

export const CHROMIUM = process.env.WEFT_CHROMIUM || "/usr/bin/chromium";
export const ARTIFACTS = path.join(path.dirname(fileURLToPath(import.meta.url)), "artifacts");

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: install it (apt-get install chromium) or set WEFT_CHROMIUM to its executable`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-background-networking", "--headless=new"],
  });
}

const CSP_VIOLATION_BINDING = "__weftCspViolation";

/**
 * A page that records any uncaught error of the console's own scripts in `errors`, and every
 * Content-Security-Policy violation the browser reports in `violations`: the page's
 * `securitypolicyviolation` events (a blocked script, style, image, worker, connection or eval),
 * and the console messages Chromium writes for them (those also in `errors`).
 */
export async function openPage(
  browser: Browser,
  errors: string[],
  violations: string[] = errors,
): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 960 } });
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
    if (/content security policy/i.test(message.text())) violations.push(message.text());
  });
  await page.exposeFunction(CSP_VIOLATION_BINDING, (report: string) => {
    violations.push(report);
  });
  // A script the page runs before its own (a string: the tests' TypeScript has no DOM types).
  await page.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (event) => {
      window.${CSP_VIOLATION_BINDING}(event.effectiveDirective + " blocked " + (event.blockedURI || "(inline)") +
        " in " + (event.sourceFile || event.documentURI) + ":" + event.lineNumber);
    });`,
  });
  return page;
}

export async function screenshot(page: Page, name: string, file?: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
  if (file !== undefined) {
    await mkdir(path.dirname(file), { recursive: true });
    await page.screenshot({ path: file });
  }
}

export interface GraphSnapshot {
  /** The execution's status badge (undefined off an execution's page). */
  status: string | undefined;
  /** Each drawn node: its state and attempt. */
  nodes: Record<string, { state: string; attempt: string | null }>;
}

/** What the page shows now: the execution's status and every node element's state. */
export async function graphSnapshot(page: Page): Promise<GraphSnapshot> {
  const drawn = await page
    .locator("[data-testid=graph] g.node")
    .evaluateAll((elements) =>
      elements.map((element) => [
        element.getAttribute("data-node-id") ?? "",
        element.getAttribute("data-state") ?? "",
        element.getAttribute("data-attempt"),
      ]),
    );
  const badge = page.getByTestId("execution-status");
  const status =
    (await badge.count()) > 0 ? ((await badge.getAttribute("data-state")) ?? undefined) : undefined;
  const nodes: GraphSnapshot["nodes"] = {};
  for (const [id, state, attempt] of drawn)
    nodes[id ?? ""] = { state: state ?? "", attempt: attempt ?? null };
  return { status, nodes };
}

/**
 * Waits until the page shows what `done` accepts, for as long as what it shows keeps changing
 * (the console polls the API: each new state is progress).
 */
export function waitForPage(
  page: Page,
  what: string,
  done: (snapshot: GraphSnapshot) => boolean,
): Promise<GraphSnapshot> {
  return waitForProgress(
    what,
    async () => {
      const snapshot = await graphSnapshot(page);
      return done(snapshot) ? { done: true, value: snapshot } : { done: false, progress: snapshot };
    },
    { intervalMs: 100 },
  );
}
