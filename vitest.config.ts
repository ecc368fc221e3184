import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Starts the emulators once for the whole run (WEFT_TEST_EMULATOR: moto by default,
    // dynamodb-local or localstack; WEFT_TEST_ENDPOINT for one already running); see
    // test/setup/emulators.ts and docs/testing.md.
    globalSetup: ["test/setup/emulators.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two-core machines: two forked workers; moto runs beside them in its own process.
    pool: "forks",
    maxWorkers: 2,
  },
});
