/** Exits non-zero unless the PostgreSQL server at the given URL answers a query. */
import { adminSql } from "@inbox/testkit"

const url = process.argv[2] ?? ""
const timer = setTimeout(() => {
  console.error(`PostgreSQL at ${url} did not answer within 15 s`)
  process.exit(1)
}, 15_000)
adminSql(url, "SELECT 1").then(
  () => {
    clearTimeout(timer)
    console.log(`PostgreSQL at ${url} is reachable; storage tests run on PGlite and PostgreSQL.`)
  },
  (error) => {
    console.error(`PostgreSQL at ${url} is unreachable: ${String(error)}`)
    process.exit(1)
  }
)
