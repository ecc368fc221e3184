// A custom task type: nodes with `"type": "greet"` run this. Every module in tasks/ is loaded by
// `weft dev` and `weft validate`, bundled by the construct, and given to the test runtime.
import { defineTask } from "weft-orchestrator/tasks";
import { z } from "zod";

export const greet = defineTask({
  type: "greet",
  // Checked when a workflow is registered: a node with bad params is refused, naming the field.
  params: z.object({ greeting: z.string().min(1).default("Hello") }).strict(),
  run: ({ params, input }) => {
    const { name } = z.object({ name: z.string().min(1) }).parse(input);
    return { message: `${params.greeting}, ${name}!` };
  },
});
