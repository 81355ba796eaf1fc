/**
 * The benchmark's server process: the real server (INBOX_* settings) plus a setup step
 * that creates tenants with organization keys, printed as one JSON line on stdout before
 * the server answers. With BENCH_SEED=N it first seeds N messages into one organization
 * (bench/seed.ts; reused when already there) and adds `seeded` to that line: PGlite allows
 * one process, so its seed runs in the server.
 */
import { NodeRuntime } from "@effect/platform-node"
import { ApiKeys, Engine, Organizations } from "@inbox/core/internal"
import { BackgroundLive, LoggingLive, ServerLive } from "@inbox/http"
import { Effect, Layer } from "effect"
import { seed } from "./seed.ts"

const tenants = Number(process.env["BENCH_TENANTS"] ?? "40")

const setup = Layer.effectDiscard(Effect.gen(function*() {
  const keys: Array<string> = []
  for (let i = 0; i < tenants; i++) {
    const { organization } = yield* (yield* Organizations).create({ ownerEmail: `bench${i}@example.com`, verified: true, plan: "scale" })
    keys.push((yield* (yield* ApiKeys).issue(organization.id, { name: "bench" })).api_key)
  }
  const seeded = process.env["BENCH_SEED"] === undefined ? undefined : yield* seed(Number(process.env["BENCH_SEED"]))
  process.stdout.write(`BENCH_KEYS ${JSON.stringify({ keys, seeded })}\n`)
}))

// BackgroundLive as `inboxctl serve` has it: the job worker, send recovery, the blob sweeper
// and the SMTP receiver (INBOX_SMTP_LISTEN), so every benchmark measures the real server.
NodeRuntime.runMain(Layer.launch(Layer.mergeAll(ServerLive, BackgroundLive, setup).pipe(Layer.provide(Engine.layerConfig), Layer.provide(LoggingLive))))
