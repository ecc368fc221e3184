import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Starts the emulators once for the whole run (WEFT_TEST_EMULATOR: moto by default, or
    // dynamodb-local); see test/setup/emulators.ts.
    globalSetup: ["test/setup/emulators.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two-core machines: two forked workers; moto runs beside them in its own process.
    pool: "forks",
    maxWorkers: 2,
  },
});
