/**
 * The live Egress (URL attachments of a send) follows the webhook URL rule: a host is
 * resolved and every address must be public, literal or by name (answered by a DNS server
 * on loopback), and the connection goes to the checked address. With
 * INBOX_WEBHOOK_ALLOW_PRIVATE the rule is lifted, which is how the fetch itself (size cap,
 * status, redirects, timeout) is tested against an HTTP server on loopback: this machine
 * reaches no public address, so a public page redirecting to a private one cannot be
 * staged here; each hop goes through the same check as the first URL (Egress.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Egress, HostResolver, Settings } from "@inbox/core/internal"
import { loopbackDns } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { createServer, type Server } from "node:http"

const serve = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ server: Server; port: number; hits: () => number }>((resolve) => {
      let hits = 0
      const server = createServer((req, res) => {
        hits++
        if (req.url === "/file.pdf") {
          res.writeHead(200, { "content-type": "application/pdf; name=x" })
          res.end("%PDF-1.4 tiny")
        } else if (req.url === "/big") {
          res.writeHead(200)
          res.end(Buffer.alloc(64 * 1024))
        } else if (req.url === "/hop") {
          res.writeHead(302, { location: "/file.pdf" })
          res.end()
        } else if (req.url === "/slow") {
          setTimeout(() => res.end("late"), 3000)
        } else {
          res.writeHead(404)
          res.end()
        }
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resolve({ server, port: typeof address === "object" && address !== null ? address.port : 0, hits: () => hits })
      })
    })
  ),
  (s) => Effect.promise(() => new Promise<void>((r) => s.server.close(() => r())))
)

const egress = (dnsServer: string, allowPrivate: boolean) =>
  Egress.layerResolving.pipe(
    Layer.provide(HostResolver.layerServers([dnsServer])),
    Layer.provide(Layer.succeed(Settings, Settings.make({ webhookAllowPrivate: allowPrivate })))
  )

const fetchWith = (layer: Layer.Layer<Egress>, url: string, maxBytes = 1024) =>
  Egress.use((e) => e.fetch(url, { maxBytes, timeout: "1 second" })).pipe(Effect.provide(layer), Effect.result)

describe("live egress", () => {
  it.live("refuses private addresses by literal and by name, and a redirect to one, before connecting", () =>
    Effect.gen(function*() {
      const http = yield* serve
      const dns = yield* loopbackDns
      dns.set("inside.test", "A", ["127.0.0.1"])
      dns.set("mixed.test", "A", ["93.184.215.14", "10.0.0.1"])
      const guarded = egress(dns.server, false)
      for (const url of [`http://127.0.0.1:${http.port}/file.pdf`, `http://inside.test:${http.port}/file.pdf`, "http://mixed.test/x", "http://[::1]/x", "file:///etc/passwd"]) {
        const result = yield* fetchWith(guarded, url)
        assert.strictEqual(result._tag, "Failure", url)
        if (result._tag === "Failure") assert.strictEqual(result.failure.reason, "forbidden", url)
      }
      assert.strictEqual(http.hits(), 0)
    }))

  it.live("fetches through the checked address: type, redirects, size cap, status and timeout", () =>
    Effect.gen(function*() {
      const http = yield* serve
      const dns = yield* loopbackDns
      dns.set("files.test", "A", ["127.0.0.1"])
      const layer = egress(dns.server, true)
      const base = `http://files.test:${http.port}`
      const ok = yield* fetchWith(layer, `${base}/file.pdf`)
      assert.strictEqual(ok._tag, "Success")
      if (ok._tag === "Success") {
        assert.strictEqual(Buffer.from(ok.success.bytes).toString(), "%PDF-1.4 tiny")
        assert.strictEqual(ok.success.content_type, "application/pdf")
      }
      const hop = yield* fetchWith(layer, `${base}/hop`)
      assert.strictEqual(hop._tag === "Success" ? Buffer.from(hop.success.bytes).toString() : hop._tag, "%PDF-1.4 tiny")
      const reasons = yield* Effect.forEach([`${base}/big`, `${base}/missing`, `${base}/slow`], (url) =>
        Effect.map(fetchWith(layer, url), (r) => r._tag === "Failure" ? r.failure.reason : "success"))
      assert.deepStrictEqual(reasons, ["too_large", "status", "timeout"])
    }))
})
