import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Starts moto once for the whole run (or uses WEFT_TEST_AWS_ENDPOINT); see test/setup/moto.ts.
    globalSetup: ["test/setup/moto.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two-core machines: two forked workers; moto runs beside them in its own process.
    pool: "forks",
    maxWorkers: 2,
  },
});
