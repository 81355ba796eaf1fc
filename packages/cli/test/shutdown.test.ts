/**
 * Stopping cleanly: `inboxctl serve` in a child process gets SIGTERM in the middle of a
 * burst of inbound deliveries, one of them still sending its body. The listener closes,
 * the requests under way finish and are answered, the process exits 0; after a restart
 * every acknowledged message is stored whole (its raw bytes download) and nothing that was
 * not acknowledged is. A keep-alive client gets no new request served after the signal:
 * the answer under way says `Connection: close`, and its next request finds no server. The
 * log says when the shutdown started and when it was complete. The job worker's part
 * (finish or release running jobs) is tested in core's jobs.test.ts.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { Agent, request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, createOrg, serve } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const SECRET = "shutdown-test-secret"
const INBOX = "burst@inbox.localhost"

const mail = (n: number) =>
  `From: Ann <ann@example.org>\r\nTo: ${INBOX}\r\nSubject: Burst ${n}\r\nMessage-ID: <burst-${n}@example.org>\r\n\r\n${"Line of text.\r\n".repeat(200)}`

type Outcome =
  | { readonly status: number; readonly messageId?: string | undefined; readonly connection?: string | undefined }
  | { readonly status: "refused" }

const deliver = (url: string, n: number): Promise<Outcome> =>
  fetch(`${url}/inbound/raw?to=${INBOX}`, { method: "POST", headers: { "x-inbound-secret": SECRET }, body: mail(n) }).then(
    async (r) => ({ status: r.status, messageId: r.ok ? ((await r.json()) as { delivered: ReadonlyArray<{ message_id: string }> }).delivered[0]?.message_id : undefined }),
    () => ({ status: "refused" as const })
  )

/** A delivery whose body arrives in two parts (the second only when `rest` is called), on a keep-alive `agent`. */
const slowDelivery = (port: number, n: number, agent: Agent) => {
  const body = Buffer.from(mail(n))
  const half = Math.floor(body.length / 2)
  let resolve: (o: Outcome) => void = () => {}
  const done = new Promise<Outcome>((r) => (resolve = r))
  const req = request({
    host: "127.0.0.1",
    port,
    method: "POST",
    path: `/inbound/raw?to=${INBOX}`,
    headers: { "x-inbound-secret": SECRET, "content-length": body.length },
    agent
  }, (res) => {
    let text = ""
    res.on("data", (d: Buffer) => (text += d.toString("utf8")))
    res.on("end", () =>
      resolve({
        status: res.statusCode ?? 0,
        messageId: res.statusCode === 200 ? (JSON.parse(text) as { delivered: ReadonlyArray<{ message_id: string }> }).delivered[0]?.message_id : undefined,
        connection: res.headers.connection
      }))
  })
  req.on("error", () => resolve({ status: "refused" }))
  req.write(body.subarray(0, half))
  return { done, rest: () => req.end(body.subarray(half)) }
}

/** A GET on a keep-alive `agent`: it reuses the agent's open connection when there is one. */
const keepAliveGet = (port: number, path: string, headers: Record<string, string>, agent: Agent) =>
  new Promise<Outcome>((resolve) => {
    const req = request({ host: "127.0.0.1", port, path, headers, agent }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode ?? 0 }))
    })
    req.on("error", () => resolve({ status: "refused" }))
    req.end()
  })

describe("inboxctl serve on SIGTERM", { timeout: 300_000 }, () => {
  let dir = ""
  let env: Record<string, string> = {}
  let key = ""

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "inboxctl-shutdown-"))
    env = childEnv({ INBOX_DATA_DIR: join(dir, "data"), INBOX_INBOUND_SECRET: SECRET, INBOX_SHUTDOWN_TIMEOUT: "60" })
    key = await createOrg(ROOT, env)
  }, 120_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("stops accepting, serves no new request on a keep-alive connection, finishes the requests under way, exits 0, logs the start and end; every acknowledged delivery is stored whole and nothing else", async () => {
    const first = await serve(ROOT, env)
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const inbox = await fetch(`${first.url}/v0/inboxes`, { method: "POST", headers: auth, body: JSON.stringify({ username: "burst" }) })
    assert.strictEqual(inbox.status, 200)

    // One connection, kept alive: the slow delivery goes on it, then the request after it.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    assert.strictEqual((await keepAliveGet(first.port, "/health", {}, agent)).status, 200)
    const slow = slowDelivery(first.port, 0, agent)
    // The slow request's headers and half its body are with the server before the signal.
    await new Promise((r) => setTimeout(r, 500))
    const burst = Array.from({ length: 30 }, (_, i) => deliver(first.url, i + 1))
    await burst[0]
    first.server.kill("SIGTERM")
    await new Promise((r) => setTimeout(r, 200))
    slow.rest()
    const answered = await slow.done
    const after = await keepAliveGet(first.port, "/v0/inboxes", { authorization: `Bearer ${key}` }, agent)
    const outcomes = [answered, ...await Promise.all(burst)]
    const run = await first.server.output
    agent.destroy()
    assert.strictEqual(run.code, 0, run.stderr)
    assert.strictEqual(answered.status, 200, "the request under way when SIGTERM came is answered")
    assert.strictEqual("connection" in answered ? answered.connection : undefined, "close", "its answer closes the connection")
    assert.include(["refused", 503], after.status, "a request sent after SIGTERM on the kept-alive connection is not served")
    const logged = run.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { message: unknown; annotations: Record<string, unknown> })
    const shutdown = logged.filter((l) => typeof l.message === "string" && /shutdown|closed to new requests/.test(l.message))
    assert.deepStrictEqual(shutdown.map((l) => l.message), ["shutdown started", "HTTP server closed to new requests", "shutdown complete"])
    assert.isAtLeast(Number(shutdown[1]?.annotations["requests_in_flight"]), 1)
    assert.isAtLeast(Number(shutdown[2]?.annotations["duration_ms"]), 0)
    for (const o of outcomes) assert.include([200, "refused"], o.status)
    const acknowledged = outcomes.flatMap((o) => ("messageId" in o && o.messageId !== undefined ? [o.messageId] : [])).sort()

    const second = await serve(ROOT, env)
    try {
      const listed = await fetch(`${second.url}/v0/inboxes/${INBOX}/messages?limit=100`, { headers: auth })
      const stored = ((await listed.json()) as { messages: ReadonlyArray<{ message_id: string }> }).messages.map((m) => m.message_id).sort()
      assert.deepStrictEqual(stored, acknowledged)
      for (const id of stored) {
        const raw = await fetch(`${second.url}/v0/inboxes/${INBOX}/messages/${id}/raw/download`, { headers: auth })
        assert.strictEqual(raw.status, 200)
        assert.match(await raw.text(), /Line of text\./)
      }
    } finally {
      second.server.kill("SIGTERM")
      await second.server.output
    }
  })
})
