import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, "console/dist/**", "test/console/artifacts/**"],
    // Starts the emulators once for the whole run (WEFT_TEST_EMULATOR: moto by default,
    // dynamodb-local or localstack; WEFT_TEST_ENDPOINT for one already running); see
    // test/setup/emulators.ts and docs/testing.md.
    // The web console's build (console/dist) too, when missing or stale: the runtimes the tests start
    // serve it, and test/console drives it in Chromium.
    globalSetup: ["test/setup/emulators.ts", "test/console/global-setup.ts", "test/setup/package-build.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two-core machines: two forked workers; moto runs beside them in its own process.
    pool: "forks",
    maxWorkers: 2,
  },
});
