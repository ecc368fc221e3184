/** The weft web console: a single-page app over the weft HTTP API (hash routing). */
import { render } from "preact";
import { DeadLettersPage } from "./pages/DeadLetters.js";
import { ExecutionPage } from "./pages/Execution.js";
import { ExecutionsPage } from "./pages/Executions.js";
import { WorkflowPage, WorkflowsPage } from "./pages/Workflows.js";
import { href, type Route, useRoute } from "./router.js";
import "./styles.css";

const NAV: Array<{ label: string; route: Route; pages: Route["page"][] }> = [
  { label: "Workflows", route: { page: "workflows" }, pages: ["workflows", "workflow"] },
  { label: "Executions", route: { page: "executions" }, pages: ["executions", "execution"] },
  { label: "Dead letters", route: { page: "dlq" }, pages: ["dlq"] },
];

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "workflows":
      return <WorkflowsPage />;
    case "workflow":
      return <WorkflowPage key={route.name} name={route.name} version={route.version} />;
    case "executions":
      return <ExecutionsPage workflow={route.workflow} status={route.status} />;
    case "execution":
      return <ExecutionPage key={route.id} id={route.id} node={route.node} />;
    case "dlq":
      return <DeadLettersPage />;
  }
}

function App() {
  const route = useRoute();
  return (
    <>
      <header class="topbar">
        <a class="brand" href={href({ page: "workflows" })}>
          weft <span>console</span>
        </a>
        <nav aria-label="main">
          {NAV.map((item) => (
            <a
              key={item.label}
              href={href(item.route)}
              aria-current={item.pages.includes(route.page) ? "page" : undefined}
            >
              {item.label}
            </a>
          ))}
        </nav>
        <span class="api-origin" title="the weft API this console talks to">
          {window.location.host}
        </span>
      </header>
      <main>
        <Page route={route} />
      </main>
    </>
  );
}

const root = document.getElementById("app");
if (root !== null) render(<App />, root);
