/**
 * A floor for a server built on Effect: `GET /v0/inboxes/:id` answered by Effect's own HTTP
 * server (NodeHttpServer, HttpRouter) over our database layer (effect/sql-pg), doing what
 * bench/reference.ts does for a key scoped to its organization (the key looked up by the hash
 * of its secret once, then cached; the inbox read within the key's organization) and answering
 * most of its body. No middleware, no logging, no metrics: it shows what Effect and effect/sql
 * themselves cost a request, for bench/survivors.ts.
 *
 * INBOX_DATABASE_URL, INBOX_PORT; prints `REFERENCE_READY` once listening.
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Database } from "@inbox/core/internal"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"

interface KeyRow {
  readonly organization_id: string
  readonly pod_id: string | null
  readonly inbox_id: string | null
}

const keys = new Map<string, KeyRow>()

const Get = HttpRouter.add("GET", "/v0/inboxes/:inbox_id", Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const request = yield* HttpServerRequest.HttpServerRequest
  const { inbox_id } = yield* HttpRouter.params
  const secret = /^Bearer\s+(\S+)\s*$/i.exec(request.headers["authorization"] ?? "")?.[1] ?? ""
  const hash = createHash("sha256").update(secret).digest("hex")
  let key = keys.get(hash)
  if (key === undefined) {
    const rows = yield* sql.unsafe<KeyRow>(
      "SELECT organization_id, pod_id, inbox_id FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL",
      [hash]
    )
    key = rows[0]
    if (key === undefined) return HttpServerResponse.text("{}", { status: 401, contentType: "application/json" })
    keys.set(hash, key)
  }
  const rows = yield* sql.unsafe<{ id: string; pod_id: string; email: string; status: string; created_at: Date; updated_at: Date }>(
    "SELECT * FROM inboxes WHERE id = $1 AND organization_id = $2",
    [inbox_id ?? "", key.organization_id]
  )
  const row = rows[0]
  if (row === undefined) return HttpServerResponse.text("{}", { status: 404, contentType: "application/json" })
  return HttpServerResponse.text(
    JSON.stringify({ pod_id: row.pod_id, inbox_id: row.id, email: row.email, status: row.status, created_at: row.created_at, updated_at: row.updated_at }),
    { contentType: "application/json" }
  )
}).pipe(Effect.orDie))

const Ready = Layer.effectDiscard(Effect.andThen(HttpServer.HttpServer, Effect.sync(() => process.stdout.write("REFERENCE_READY\n"))))

NodeRuntime.runMain(Layer.launch(
  Layer.merge(HttpRouter.serve(Get, { disableLogger: true }), Ready).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env["INBOX_PORT"]), host: "127.0.0.1" })),
    Layer.provide(Database.layerConfig)
  )
))
