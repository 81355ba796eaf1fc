/**
 * OpenTelemetry traces: `inboxctl serve` with OTEL_EXPORTER_OTLP_ENDPOINT set exports its
 * spans over OTLP/HTTP. A collector stand-in (node:http on loopback, accepting JSON or
 * protobuf at /v1/traces) receives them; one API request must arrive as one trace: the
 * request's server span, the operation it ran, the service's `Effect.fn` span and its SQL,
 * each the child of the span that ran it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, createOrg, serve } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: { readonly stringValue?: string } }>
}

interface Receiver {
  readonly server: Server
  readonly url: string
  readonly spans: Array<Span>
  readonly bodies: Array<{ readonly path: string; readonly contentType: string; readonly bytes: Buffer }>
}

/** A collector's OTLP/HTTP traces endpoint, keeping what it is sent. */
const receiver = (): Promise<Receiver> =>
  new Promise((resolve) => {
    const spans: Array<Span> = []
    const bodies: Receiver["bodies"] = []
    const server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const bytes = Buffer.concat(chunks)
        const contentType = req.headers["content-type"] ?? ""
        bodies.push({ path: req.url ?? "", contentType, bytes })
        if (req.url === "/v1/traces" && contentType.startsWith("application/json")) {
          const data = JSON.parse(bytes.toString("utf8")) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Span> }> }> }
          for (const r of data.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans)
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resolve({ server, url: `http://127.0.0.1:${port}`, spans, bodies })
    })
  })

const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 100; i++) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe("OpenTelemetry traces over OTLP", { timeout: 300_000 }, () => {
  let dir = ""
  let collector: Receiver
  let key = ""

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "inboxctl-otlp-"))
    collector = await receiver()
    key = await createOrg(ROOT, childEnv({ INBOX_DATA_DIR: join(dir, "data") }))
  }, 120_000)
  afterAll(() => {
    collector.server.close()
    rmSync(dir, { recursive: true, force: true })
  })
  /** `inboxctl serve` exporting its spans to the collector as JSON, in batches 200 ms apart. */
  const serveTraced = () =>
    serve(ROOT, childEnv({
      INBOX_DATA_DIR: join(dir, "data"),
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "200"
    }))

  it("exports a request's spans (request, operation, Effect.fn, SQL statements) as one trace to OTEL_EXPORTER_OTLP_ENDPOINT", async () => {
    const { server, url } = await serveTraced()
    try {
      const created = await fetch(`${url}/v0/inboxes`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ username: "traced" })
      })
      assert.strictEqual(created.status, 200)
      const requestId = created.headers.get("x-request-id") ?? ""
      const attribute = (s: Span, k: string) => s.attributes.find((a) => a.key === k)?.value.stringValue
      await until(() => collector.spans.some((s) => attribute(s, "inbox.request_id") === requestId), "the request's span")
      const root = collector.spans.find((s) => attribute(s, "inbox.request_id") === requestId)!
      assert.strictEqual(root.name, "POST /v0/inboxes")
      assert.strictEqual(root.parentSpanId ?? "", "", "the request's span is the root of its trace")
      await until(() => collector.spans.some((s) => s.traceId === root.traceId && s.name === "Inboxes.create"), "the service's span")
      const trace = collector.spans.filter((s) => s.traceId === root.traceId)
      const named = (name: string) => trace.find((s) => s.name === name)
      const operation = named("inboxes.create")
      const service = named("Inboxes.create")
      assert.isDefined(operation, `spans: ${trace.map((s) => s.name).join(", ")}`)
      assert.strictEqual(operation?.parentSpanId, root.spanId)
      assert.isDefined(service)
      const ids = new Set(trace.map((s) => s.spanId))
      for (const s of trace) if (s !== root) assert.isTrue(ids.has(s.parentSpanId ?? ""), `${s.name} hangs off a span of the same request`)
      assert.isTrue(trace.some((s) => s.name === "postgres"), `spans: ${trace.map((s) => s.name).join(", ")}`)
      assert.deepStrictEqual([...new Set(collector.bodies.map((b) => b.path))], ["/v1/traces"])
    } finally {
      server.kill("SIGTERM")
      await server.output
    }
  })

  it("a key given in the URL (?api_key=am_...) is in no log line and no exported span, whatever the route answers", async () => {
    const { server, url } = await serveTraced()
    const secret = key.slice("am_".length)
    const unknown = `am_${"0".repeat(secret.length)}`
    const statuses: Array<number> = []
    try {
      const requestIds: Array<string> = []
      // The direct path, the router (WebSocket route without an upgrade, a download, an
      // unknown route, a malformed URL, a preflight), a wrong key, and the key twice.
      for (const [method, path] of [
        ["GET", `/v0/inboxes?api_key=${key}`],
        ["GET", `/v0/inboxes?limit=2&api_key=${key}&page_token=x`],
        ["GET", `/v0/websocket?api_key=${key}`],
        ["GET", `/v0/inboxes/nope/messages/nope/raw/download?api_key=${key}`],
        ["GET", `/v0/no-such-route?api_key=${key}`],
        ["GET", `/v0/%E0%A4%A?api_key=${key}`],
        ["OPTIONS", `/v0/inboxes?api_key=${key}`],
        ["GET", `/v0/inboxes?api_key=${unknown}`],
        ["GET", `/v0/inboxes?API_KEY=${key}&api_key=${key}`]
      ] as const) {
        const res = await fetch(`${url}${path}`, { method })
        statuses.push(res.status)
        requestIds.push(res.headers.get("x-request-id") ?? "")
        await res.arrayBuffer()
      }
      assert.strictEqual(statuses[0], 200)
      const attribute = (s: Span, k: string) => s.attributes.find((a) => a.key === k)?.value.stringValue
      await until(() => collector.spans.some((s) => (attribute(s, "url.full") ?? "").includes("/v0/websocket")), "the router's spans")
      await until(() => requestIds.filter((id) => collector.spans.some((s) => attribute(s, "inbox.request_id") === id)).length >= 2, "the direct path's spans")
      const exported = JSON.stringify(collector.spans)
      for (const s of [secret, unknown.slice(3)]) assert.notInclude(exported, s, "a span holds the key")
      assert.include(exported, "api_key=REDACTED")
    } finally {
      server.kill("SIGTERM")
      const { stdout, stderr } = await server.output
      assert.include(stdout, "\"request\"", "the request lines were logged")
      for (const s of [secret, unknown.slice(3)]) {
        assert.notInclude(stdout, s, `stdout holds the key (statuses ${statuses.join(", ")})`)
        assert.notInclude(stderr, s, "stderr holds the key")
      }
    }
  })
})
