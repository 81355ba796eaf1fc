/**
 * What Node's own HTTP server does before a request reaches the app, over real sockets on
 * loopback: malformed requests, oversized headers and slow clients are answered with the
 * spec's JSON error body and an x-request-id, within seconds; connections beyond the cap
 * are closed; and the client IP used for limits comes from the socket unless the peer is a
 * trusted proxy.
 */
import { assert, it, layer } from "@effect/vitest"
import { AppRoutes, layerNodeServer, type NodeServerOptions } from "@inbox/http"
import { engineLayer, pglite } from "@inbox/testkit"
import type { SettingsShape } from "@inbox/core/internal"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { connect, type Socket } from "node:net"

const served = (options: NodeServerOptions, settings: Partial<SettingsShape> = {}) =>
  HttpRouter.serve(AppRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(layerNodeServer({ port: 0, host: "127.0.0.1" }, options)),
    Layer.provideMerge(engineLayer(pglite, settings))
  )

const port = HttpServer.HttpServer.useSync((s) => ("port" in s.address ? s.address.port : 0))

interface RawAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: any
  /** Milliseconds from connecting until the server closed the connection. */
  readonly ms: number
}

/** Writes `data` on a fresh connection and reads until the server closes it. */
const exchange = (p: number, data: string) =>
  Effect.promise(() =>
    new Promise<RawAnswer>((resolve, reject) => {
      const started = Date.now()
      const socket = connect(p, "127.0.0.1", () => socket.write(data))
      let raw = ""
      socket.on("data", (chunk: Buffer) => (raw += chunk.toString("latin1")))
      socket.on("error", () => undefined)
      socket.on("close", () => {
        const [head = "", ...rest] = raw.split("\r\n\r\n")
        const [statusLine = "", ...lines] = head.split("\r\n")
        const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1] ?? "0")
        if (status === 0) return reject(new Error(`no HTTP answer: ${JSON.stringify(raw.slice(0, 200))}`))
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]))
        resolve({ status, headers, body: JSON.parse(rest.join("\r\n\r\n")), ms: Date.now() - started })
      })
    })
  )

const assertSpecError = (answer: RawAnswer, status: number, code: string) => {
  assert.strictEqual(answer.status, status)
  assert.strictEqual(answer.body.code, code)
  assert.isString(answer.body.name)
  assert.isString(answer.body.message)
  assert.strictEqual(answer.headers["content-type"], "application/json")
  assert.match(answer.headers["x-request-id"] ?? "", /^req_[0-9a-f]{24}$/)
}

const LIMITS: NodeServerOptions = { headersTimeoutSeconds: 1, requestTimeoutSeconds: 2, maxConnections: 3 }

layer(served(LIMITS), { timeout: "120 seconds", excludeTestServices: true })("Node's HTTP errors and limits", (it) => {
  it.effect("a malformed request line is 400 bad_request with the spec's JSON body and an x-request-id", () =>
    Effect.gen(function*() {
      const answer = yield* exchange(yield* port, "GARBAGE\r\n\r\n")
      assertSpecError(answer, 400, "bad_request")
      assert.strictEqual(answer.body.name, "ValidationError")
    }))

  it.effect("a control character in the request target is 400 bad_request as JSON", () =>
    Effect.gen(function*() {
      assertSpecError(yield* exchange(yield* port, "GET /v0/pods\u0000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), 400, "bad_request")
    }))

  it.effect("headers over 16 KB are 431 headers_too_large as JSON with an x-request-id", () =>
    Effect.gen(function*() {
      const answer = yield* exchange(yield* port, `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)
      assertSpecError(answer, 431, "headers_too_large")
    }))

  it.effect("headers that do not arrive within the headers timeout are 408 request_timeout within seconds, not a minute", () =>
    Effect.gen(function*() {
      const answer = yield* exchange(yield* port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
      assertSpecError(answer, 408, "request_timeout")
      assert.isAtLeast(answer.ms, 900)
      assert.isBelow(answer.ms, 5_000)
    }))

  it.effect("a body that does not arrive within the request timeout is 408 request_timeout within seconds", () =>
    Effect.gen(function*() {
      const answer = yield* exchange(
        yield* port,
        "POST /v0/agent/sign-up HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"user"
      )
      assertSpecError(answer, 408, "request_timeout")
      assert.isAtLeast(answer.ms, 1_900)
      assert.isBelow(answer.ms, 6_000)
    }))

  it.effect("connections beyond the cap are closed at once; a freed slot serves again", () =>
    Effect.gen(function*() {
      const p = yield* port
      const open = (): Promise<Socket> =>
        new Promise((resolve) => {
          const s = connect(p, "127.0.0.1", () => resolve(s))
          s.on("error", () => undefined)
        })
      const held = yield* Effect.promise(() => Promise.all([open(), open(), open()]))
      // Give the server a moment to count the held connections.
      yield* Effect.sleep("100 millis")
      const dropped = yield* Effect.promise(() =>
        new Promise<{ data: string; ms: number }>((resolve) => {
          const started = Date.now()
          const s = connect(p, "127.0.0.1", () => s.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
          let data = ""
          s.on("data", (d: Buffer) => (data += d.toString()))
          s.on("error", () => undefined)
          s.on("close", () => resolve({ data, ms: Date.now() - started }))
        })
      )
      assert.strictEqual(dropped.data, "", "no answer beyond the cap")
      assert.isBelow(dropped.ms, 900, "closed before any timeout")
      for (const s of held) s.destroy()
      yield* Effect.sleep("100 millis")
      const health = yield* Effect.promise(() => fetch(`http://127.0.0.1:${p}/health`))
      assert.strictEqual(health.status, 200)
    }))
})

/** Three requests without a key, each naming a client in X-Forwarded-For; their statuses. */
const forwardedStatuses = (p: number, forwardedFor: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const statuses: Array<number> = []
    for (const ip of forwardedFor) {
      statuses.push((await fetch(`http://127.0.0.1:${p}/public/plans`, { headers: { "x-forwarded-for": ip } })).status)
    }
    return statuses
  })

const PER_IP = { rateLimits: true, requestsPerMinute: 2 }

layer(served(LIMITS, PER_IP), { timeout: "120 seconds", excludeTestServices: true })("client IP without trusted proxies", (it) => {
  it.effect("X-Forwarded-For is ignored: the socket's address is the client, so forged addresses share one limit", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* forwardedStatuses(yield* port, ["198.51.100.1", "198.51.100.2", "198.51.100.3"]), [200, 200, 429])
    }))
})

layer(served(LIMITS, { ...PER_IP, trustedProxies: ["127.0.0.1"] }), { timeout: "120 seconds", excludeTestServices: true })("client IP behind a trusted proxy", (it) => {
  it.effect("from a proxy named in INBOX_TRUSTED_PROXIES, X-Forwarded-For names the client, each with its own limit", () =>
    Effect.gen(function*() {
      const p = yield* port
      assert.deepStrictEqual(yield* forwardedStatuses(p, ["198.51.100.1", "198.51.100.2", "198.51.100.3"]), [200, 200, 200])
      assert.deepStrictEqual(yield* forwardedStatuses(p, ["198.51.100.9", "198.51.100.9", "198.51.100.9"]), [200, 200, 429])
      // The nearest untrusted hop counts: a client cannot prepend an address of its choice.
      assert.deepStrictEqual(yield* forwardedStatuses(p, ["203.0.113.5, 198.51.100.9"]), [429])
    }))
})
