/**
 * What some test files need beyond Node and PGlite: a PostgreSQL server (races that PGlite's
 * single connection cannot lose, several server processes on one database), a browser (the
 * dashboard driven in Chromium) or a mail client (Debian's mbsync against the IMAP server). Each file is listed once, here: vitest.config.ts leaves out
 * a file whose need is not met, so that it neither fails nor runs with no tests, and
 * scripts/test.sh names it with the reason. With INBOX_TEST_REQUIRE_ALL=1 (CI) nothing is
 * left out and a missing need is an error. Files that only add PostgreSQL runs beside their
 * PGlite ones (storages()) are not listed: they run either way.
 *
 * Imports nothing but node:fs, so the config and the test script load it cheaply.
 */
import { accessSync, constants } from "node:fs"

export const POSTGRES_ENV = "INBOX_TEST_DATABASE_URL"
export const CHROMIUM_ENV = "INBOX_TEST_CHROMIUM"
export const REQUIRE_ALL_ENV = "INBOX_TEST_REQUIRE_ALL"
export const DEFAULT_CHROMIUM = "/usr/bin/chromium"

/** The PostgreSQL server the tests may use, when one is named. */
export const postgresUrl = (): string | undefined => {
  const url = process.env[POSTGRES_ENV]
  return url === undefined || url === "" ? undefined : url
}

/** The Chromium binary the browser tests drive: Debian's, unless INBOX_TEST_CHROMIUM names another. */
export const chromiumPath = (): string => {
  const path = process.env[CHROMIUM_ENV]
  return path === undefined || path === "" ? DEFAULT_CHROMIUM : path
}

/** CI mode: every requirement must be met and no test may be skipped. */
export const requireAll = (): boolean => (process.env[REQUIRE_ALL_ENV] ?? "") === "1"

const executable = (path: string) => {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

interface Requirement {
  readonly files: ReadonlyArray<string>
  /** Why the files cannot run here, or undefined when they can. */
  readonly missing: () => string | undefined
}

/**
 * Files whose every test needs PostgreSQL (database-outage.test.ts runs a server of its own
 * from the binaries installed with it: own-postgres.ts).
 */
export const POSTGRES_FILES: ReadonlyArray<string> = [
  "packages/core/test/signals.test.ts",
  "packages/http/test/auth-races.test.ts",
  "packages/http/test/concurrency.test.ts",
  "packages/http/test/crash-postgres.test.ts",
  "packages/http/test/database-outage.test.ts",
  "packages/http/test/imap-processes.test.ts",
  "packages/http/test/shared-limits.test.ts",
  "packages/http/test/two-processes.test.ts"
]

/** Files that drive Debian's mbsync (package isync), a real IMAP client in batch mode. */
export const MBSYNC_FILES: ReadonlyArray<string> = ["packages/http/test/imap-mbsync.test.ts"]
export const MBSYNC = "/usr/bin/mbsync"

/** Files that drive Chromium. */
export const CHROMIUM_FILES: ReadonlyArray<string> = ["packages/http/test/dashboard-e2e.test.ts", "packages/http/test/dashboard-e2e-newcomer.test.ts"]

const REQUIREMENTS: ReadonlyArray<Requirement> = [
  {
    files: MBSYNC_FILES,
    missing: () => executable(MBSYNC) ? undefined : `no mbsync at ${MBSYNC} (apt-get install -y isync)`
  },
  {
    files: POSTGRES_FILES,
    missing: () =>
      postgresUrl() === undefined
        ? `no PostgreSQL (set ${POSTGRES_ENV}, e.g. postgres://postgres@127.0.0.1:5432/test)`
        : undefined
  },
  {
    files: CHROMIUM_FILES,
    missing: () => {
      const path = chromiumPath()
      if (executable(path)) return undefined
      return path === DEFAULT_CHROMIUM
        ? `no Chromium at ${path} (run as root to have it installed, or set ${CHROMIUM_ENV} to a Chromium binary)`
        : `no Chromium at ${path} (${CHROMIUM_ENV})`
    }
  }
]

/** The files that cannot run on this machine, each with its one-line reason. */
export const unmetFiles = (): ReadonlyArray<{ readonly file: string; readonly reason: string }> =>
  REQUIREMENTS.flatMap((requirement) => {
    const reason = requirement.missing()
    return reason === undefined ? [] : requirement.files.map((file) => ({ file, reason }))
  })
