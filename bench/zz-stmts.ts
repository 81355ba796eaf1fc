import { adminSql } from "@inbox/testkit"
import { startServer, ingestLoad } from "./messaging.ts"
import { run, stop } from "./http.ts"
const server = "postgres://postgres@127.0.0.1:5432/test"
const name = "inbox_scratch_stmts"
await adminSql(server, `DROP DATABASE IF EXISTS ${name}`)
await adminSql(server, `CREATE DATABASE ${name}`)
const ours = await startServer({ INBOX_DATABASE_URL: server.replace(/\/test$/, "/" + name), BENCH_TENANTS: "1" }, 29411)
const options = await ingestLoad("http://127.0.0.1:29411", ours.keys[0]!)
await run({ ...options, connections: 8 }, 2)
await adminSql(server, `alter system set log_min_duration_statement=0`)
await adminSql(server, `select pg_reload_conf()`)
await new Promise((r) => setTimeout(r, 500))
console.log("MARK", new Date().toISOString())
const f = await run({ ...options, connections: 8 }, 3)
console.log(f)
await adminSql(server, `alter system reset log_min_duration_statement`)
await adminSql(server, `select pg_reload_conf()`)
await stop(ours.child)
