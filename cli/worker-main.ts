/**
 * `weft worker` on its own: `tsx cli/worker-main.ts --pool P --tasks DIR …` (see WORKER_USAGE), until
 * the command is wired into `weft` itself.
 */
import { runWorkerCommand } from "./worker-command.js";

function flush(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}

const code = await runWorkerCommand(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
await Promise.all([flush(process.stdout), flush(process.stderr)]);
process.exit(code);
