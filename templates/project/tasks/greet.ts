// A custom task type: nodes with `"type": "greet"` run this. Every module in tasks/ is loaded by
// `weft dev` and `weft validate`, bundled by the construct, and given to the test runtime.
import { defineTask, TerminalError } from "weft-orchestrator/tasks";
// `* as z`: the construct bundles this file into every function, and `import { z }` would carry
// all of zod's locales (about 370 KB) with it.
import * as z from "zod";

export const greet = defineTask({
  type: "greet",
  // Checked when a workflow is registered: a node with bad params is refused, naming the field.
  // `prefault({})`: a node without params greets with the default.
  params: z
    .object({ greeting: z.string().min(1).default("Hello") })
    .strict()
    .prefault({}),
  run: ({ params, input }) => {
    const parsed = z.object({ name: z.string().min(1) }).safeParse(input);
    // Retrying cannot give the input a name: fail the node at once.
    if (!parsed.success) throw new TerminalError('greet needs an input like {"name": "Ada"}');
    return { message: `${params.greeting}, ${parsed.data.name}!` };
  },
});
