import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: one worker per core; PGlite instances are shared per file.
    maxWorkers: 2,
    globalSetup: ["packages/testkit/src/global-setup.ts"],
    reporters: ["default"]
  }
})
