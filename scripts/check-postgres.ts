/** Exits non-zero unless the PostgreSQL server at the given URL answers a query. */
import { adminSql } from "@inbox/testkit"

const url = process.argv[2] ?? ""
const FIX = "  fix: start the PostgreSQL server (CI expects user postgres, trust auth, database test on 127.0.0.1:5432), or set INBOX_TEST_DATABASE_URL to one that runs."
const timer = setTimeout(() => {
  console.error(`setup: reaching PostgreSQL at ${url} failed: no answer within 15 s.`)
  console.error(FIX)
  process.exit(1)
}, 15_000)
adminSql(url, "SELECT 1").then(
  () => {
    clearTimeout(timer)
    console.log(`PostgreSQL at ${url} is reachable; storage tests run on PGlite and PostgreSQL.`)
  },
  (error) => {
    console.error(`setup: reaching PostgreSQL at ${url} failed: ${String(error)}`)
    console.error(FIX)
    process.exit(1)
  }
)
