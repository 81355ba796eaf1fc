/**
 * kill -9 under load on PostgreSQL (crash.test.ts runs it on PGlite beside this file; both
 * wait for webhook retries and job leases, so they run side by side). When
 * INBOX_TEST_DATABASE_URL is set; without it the file is left out (testkit requirements.ts).
 */
import { POSTGRES_ENV, postgresStorage } from "@inbox/testkit"
import { crashSuite } from "./crash-suite.ts"

const url = process.env[POSTGRES_ENV]
if (url !== undefined && url !== "") crashSuite("PostgreSQL", () => postgresStorage(url))
