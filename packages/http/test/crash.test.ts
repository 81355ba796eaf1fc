/**
 * kill -9 under load (issue 7, Receive and Proof): a real server process gets SIGKILL in
 * the middle of a burst of inbound deliveries and sends, and is restarted on the same
 * storage (testkit crash.ts; `pnpm crash` runs the same with larger numbers and writes the
 * counts to BENCHMARKS.md). On PGlite here; on PostgreSQL in crash-postgres.test.ts.
 */
import { pgliteStorage } from "@inbox/testkit"
import { crashSuite } from "./crash-suite.ts"

crashSuite("PGlite", pgliteStorage)
