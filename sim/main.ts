/**
 * The simulation's command line.
 *   npm run sim -- --seed S [--trace] [--grep TEXT]   replay one seed and print its trace summary
 *   npm run sim -- --runs N [--start S] [--keep-going] a campaign; prints the first failing seed
 *                                                      (with --keep-going, every failing seed by rule)
 *   add --no-redrive to either: no operator redrives dead letters (worlds as before redrives were simulated)
 *   add --no-flow-control to either: no `when`, `onError` or params expressions in the workflows
 *   add --no-maps to either: no `map` nodes in the workflows
 *   add --no-children to either: no child workflows (`workflow` nodes, maps over a workflow)
 *   add --no-timers to either: no timer worlds (far waits through the due index, sweeper outages)
 *   add --no-externals to either: no external workers nor callbacks (--only-externals: in every world)
 *   add --vars to either: `vars` incr nodes in half the worlds (--only-vars: in every world)
 *   add --loops to either: `loop` nodes in half the worlds (--only-loops: in every world)
 *   add --limits to either: concurrency limits on nodes in half the worlds (--only-limits: in every world)
 *   add --help: this text
 * Exit code 1 when an invariant is violated.
 */
import { runCampaign } from "./campaign.js";
import { formatResult } from "./report.js";
import { runWorld } from "./world.js";

function option(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : undefined;
}
const flag = (name: string) => process.argv.includes(`--${name}`);

async function main(): Promise<number> {
  if (flag("help")) {
    console.log(
      [
        "npm run sim -- --seed S [--trace] [--grep TEXT]    replay one seed",
        "npm run sim -- --runs N [--start S] [--keep-going]  a campaign of N seeds from S (default 100 from 1)",
        "  --no-redrive        no operator redrives dead letters",
        "  --no-flow-control   no when / onError / params expressions in the workflows",
        "  --no-maps           no map nodes in the workflows",
        "  --no-children       no child workflows (workflow nodes, maps over a workflow)",
        "  --no-timers         no timer worlds (far waits through the due index, sweeper outages)",
        "  --no-externals      no external workers nor callback nodes",
        "  --only-externals    external workers and callback nodes in every world",
        "  --vars              vars nodes incrementing a counter in half the worlds (--only-vars: every world)",
        "  --loops             loop nodes over a library workflow in half the worlds (--only-loops: every world)",
        "  --limits            concurrency limits on nodes in half the worlds (--only-limits: every world)",
      ].join("\n"),
    );
    return 0;
  }
  const seed = option("seed");
  if (seed !== undefined) {
    const result = await runWorld({
      seed: Number(seed),
      keepTrace: flag("trace") || option("grep") !== undefined,
      redrive: !flag("no-redrive"),
      flowControl: !flag("no-flow-control"),
      maps: !flag("no-maps"),
      children: !flag("no-children"),
      timers: !flag("no-timers"),
      externals: flag("only-externals") ? "always" : !flag("no-externals"),
      vars: flag("only-vars") ? "always" : flag("vars"),
      loops: flag("only-loops") ? "always" : flag("loops"),
      limits: flag("only-limits") ? "always" : flag("limits"),
    });
    const grep = option("grep");
    if (flag("trace") || grep !== undefined) {
      for (const line of result.trace) if (grep === undefined || line.includes(grep)) console.log(line);
    }
    console.log(formatResult(result, { traceLines: flag("trace") || grep !== undefined ? 0 : 40 }));
    return result.violations.length > 0 ? 1 : 0;
  }
  const runs = Number(option("runs") ?? 100);
  const start = Number(option("start") ?? 1);
  const summary = await runCampaign({
    runs,
    start,
    stopAtFirstFailure: !flag("keep-going"),
    redrive: !flag("no-redrive"),
    flowControl: !flag("no-flow-control"),
    maps: !flag("no-maps"),
    children: !flag("no-children"),
    timers: !flag("no-timers"),
    externals: flag("only-externals") ? "always" : !flag("no-externals"),
    vars: flag("only-vars") ? "always" : flag("vars"),
    loops: flag("only-loops") ? "always" : flag("loops"),
    limits: flag("only-limits") ? "always" : flag("limits"),
    onProgress: (done, failures, ms) => {
      if (done % 500 === 0)
        console.error(`  ${done}/${runs} seeds, ${failures} failing, ${(ms / 1000).toFixed(1)} s`);
    },
  });
  console.log(summary.text);
  return summary.failures.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
