/**
 * Stopping cleanly: `inboxctl serve` in a child process gets SIGTERM in the middle of a
 * burst of inbound deliveries, one of them still sending its body. The listener closes,
 * the requests under way finish and are answered, the process exits 0; after a restart
 * every acknowledged message is stored whole (its raw bytes download) and nothing that was
 * not acknowledged is. The job worker's part (finish or release running jobs) is tested in
 * core's jobs.test.ts.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { childEnv, createOrg, serve } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const SECRET = "shutdown-test-secret"
const INBOX = "burst@inbox.localhost"

const mail = (n: number) =>
  `From: Ann <ann@example.org>\r\nTo: ${INBOX}\r\nSubject: Burst ${n}\r\nMessage-ID: <burst-${n}@example.org>\r\n\r\n${"Line of text.\r\n".repeat(200)}`

type Outcome = { readonly status: number; readonly messageId?: string | undefined } | { readonly status: "refused" }

const deliver = (url: string, n: number): Promise<Outcome> =>
  fetch(`${url}/inbound/raw?to=${INBOX}`, { method: "POST", headers: { "x-inbound-secret": SECRET }, body: mail(n) }).then(
    async (r) => ({ status: r.status, messageId: r.ok ? ((await r.json()) as { delivered: ReadonlyArray<{ message_id: string }> }).delivered[0]?.message_id : undefined }),
    () => ({ status: "refused" as const })
  )

/** A delivery whose body arrives in two parts: the second only when `rest` is called. */
const slowDelivery = (port: number, n: number) => {
  const body = Buffer.from(mail(n))
  const half = Math.floor(body.length / 2)
  let resolve: (o: Outcome) => void = () => {}
  const done = new Promise<Outcome>((r) => (resolve = r))
  const req = request({
    host: "127.0.0.1",
    port,
    method: "POST",
    path: `/inbound/raw?to=${INBOX}`,
    headers: { "x-inbound-secret": SECRET, "content-length": body.length }
  }, (res) => {
    let text = ""
    res.on("data", (d: Buffer) => (text += d.toString("utf8")))
    res.on("end", () => resolve({ status: res.statusCode ?? 0, messageId: res.statusCode === 200 ? (JSON.parse(text) as { delivered: ReadonlyArray<{ message_id: string }> }).delivered[0]?.message_id : undefined }))
  })
  req.on("error", () => resolve({ status: "refused" }))
  req.write(body.subarray(0, half))
  return { done, rest: () => req.end(body.subarray(half)) }
}

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

  it("stops accepting, finishes the requests under way, exits 0; every acknowledged delivery is stored whole and nothing else", async () => {
    const first = await serve(ROOT, env)
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const inbox = await fetch(`${first.url}/v0/inboxes`, { method: "POST", headers: auth, body: JSON.stringify({ username: "burst" }) })
    assert.strictEqual(inbox.status, 200)

    const slow = slowDelivery(first.port, 0)
    // The slow request's headers and half its body are with the server before the signal.
    await new Promise((r) => setTimeout(r, 500))
    const burst = Array.from({ length: 30 }, (_, i) => deliver(first.url, i + 1))
    await burst[0]
    first.server.kill("SIGTERM")
    await new Promise((r) => setTimeout(r, 200))
    slow.rest()
    const outcomes = await Promise.all([slow.done, ...burst])
    const run = await first.server.output
    assert.strictEqual(run.code, 0, run.stderr)
    assert.strictEqual(outcomes[0]?.status, 200, "the request under way when SIGTERM came is answered")
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
