import { defineConfig } from "vitest/config"

/**
 * Files whose every test needs PostgreSQL (races that PGlite's single connection cannot
 * lose, several server processes on one database). Without INBOX_TEST_DATABASE_URL they are
 * left out, rather than failing as files with no tests; CI always sets it.
 */
const POSTGRES_ONLY = [
  "packages/http/test/auth-races.test.ts",
  "packages/http/test/concurrency.test.ts",
  "packages/http/test/crash-postgres.test.ts",
  "packages/http/test/shared-limits.test.ts",
  "packages/http/test/two-processes.test.ts"
]

const withPostgres = (process.env["INBOX_TEST_DATABASE_URL"] ?? "") !== ""

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/**/*.test.ts"],
    exclude: ["**/node_modules/**", ...(withPostgres ? [] : POSTGRES_ONLY)],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: one worker per core; PGlite instances are shared per file.
    maxWorkers: 2,
    globalSetup: ["packages/testkit/src/global-setup.ts"],
    reporters: ["default"]
  }
})
