/**
 * The database going away and coming back (db/Availability.ts), with a real `inboxctl
 * serve` on a PostgreSQL server of the test's own that the test stops and starts. While it
 * is stopped every request that needs it is answered 503 service_unavailable with
 * Retry-After (never 500), whichever path it takes (an operation, the key check before it,
 * an operator route, /auth; an MCP tool call gets it as the tool's error), the SMTP
 * receiver answers 451 4.3.0, and /ready says not ready; once it is back the same requests
 * succeed without a restart, and the log holds one line when it went and one when it
 * returned, and no stack trace. Needs PostgreSQL's server binaries (testkit requirements.ts
 * lists the file).
 */import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createOrganization, freePort, type OwnPostgres, serverEnv, type ServerProcess, startOwnPostgres, startServer } from "@inbox/testkit"
import nodemailer from "nodemailer"

const SECRET = "outage-inbound-secret"
const INBOX = "outage@inbox.localhost"

const mail = (n: number) => `From: Ann <ann@example.org>\r\nTo: ${INBOX}\r\nSubject: Outage ${n}\r\nMessage-ID: <outage-${n}@example.org>\r\n\r\nHello.\r\n`

interface Answer {
  readonly what: string
  readonly status: number
  readonly retryAfter: string | null
  readonly code: string | undefined
}

const logLines = (server: ServerProcess) =>
  server.stdout().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { message: unknown; level: string; annotations: Record<string, unknown> })

const messageOf = (line: { message: unknown }) => Array.isArray(line.message) ? String(line.message[0]) : String(line.message)

describe("the database going away under a running server", { timeout: 180_000 }, () => {
  let pg: OwnPostgres
  let server: ServerProcess
  let key = ""
  let smtpPort = 0

  beforeAll(async () => {
    pg = await startOwnPostgres()
    smtpPort = await freePort()
    const env = serverEnv({ INBOX_DATABASE_URL: pg.url, INBOX_INBOUND_SECRET: SECRET, INBOX_SMTP_LISTEN: `127.0.0.1:${smtpPort}` })
    key = (await createOrganization(env)).api_key
    server = await startServer(env, undefined, { captureStdout: true })
    const created = await fetch(`${server.url}/v0/inboxes`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ username: "outage" })
    })
    assert.strictEqual(created.status, 200, await created.text())
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    pg?.remove()
  })

  /** One of each path a request can take to the database. */
  const requests = (n: number): ReadonlyArray<Promise<Answer>> => {
    const call = (what: string, path: string, init: RequestInit = {}) =>
      fetch(`${server.url}${path}`, init).then(async (r) => ({
        what,
        status: r.status,
        retryAfter: r.headers.get("retry-after"),
        code: r.headers.get("content-type")?.includes("json") === true ? ((await r.json()) as { code?: string }).code : undefined
      }))
    return [
      call("an operation", `/v0/inboxes/${INBOX}/messages`, { headers: { authorization: `Bearer ${key}` } }),
      call("the key check", "/v0/inboxes", { headers: { authorization: `Bearer am_${"0".repeat(40)}${n}` } }),
      call("an operator route", `/inbound/raw?to=${INBOX}`, { method: "POST", headers: { "x-inbound-secret": SECRET }, body: mail(n) }),
      call("a dashboard sign-in", "/auth/sign-in", {
        method: "POST",
        headers: { "content-type": "application/json", origin: server.url },
        body: JSON.stringify({ email: `someone${n}@example.com`, password: "a long enough password" })
      })
    ]
  }

  /** An MCP tool call: the key is known (cached), so the operation meets the outage and answers it as its error. */
  const mcpCall = () =>
    fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_inboxes", arguments: {} } })
    }).then(async (r) => {
      const answer = (await r.json()) as { result?: { isError?: boolean; content: ReadonlyArray<{ text: string }> } }
      return { status: r.status, isError: answer.result?.isError === true, code: (JSON.parse(answer.result?.content[0]?.text ?? "{}") as { code?: string }).code }
    })

  const smtpSend = (n: number) =>
    nodemailer.createTransport({ host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true })
      .sendMail({ envelope: { from: "ann@example.org", to: [INBOX] }, raw: mail(100 + n) })
      .then(() => "250", (e: { responseCode?: number; response?: string }) => `${e.responseCode} ${e.response ?? ""}`)

  it("answers 503 service_unavailable with Retry-After (SMTP 451 4.3.0) while it is stopped, /ready is not ready, and all works again once it is back, with one log line each way", async () => {
    const before = await Promise.all(requests(0))
    assert.deepStrictEqual(before.map((a) => a.status), [200, 401, 200, 401], JSON.stringify(before))

    pg.stop()
    const during: Array<Answer> = []
    for (let round = 1; round <= 5; round++) {
      during.push(...await Promise.all(requests(round)))
      await new Promise((r) => setTimeout(r, 300))
    }
    for (const a of during) {
      assert.deepStrictEqual({ status: a.status, code: a.code, retry: a.retryAfter !== null }, { status: 503, code: "service_unavailable", retry: true }, a.what)
    }
    const ready = await fetch(`${server.url}/ready`)
    assert.strictEqual(ready.status, 503)
    assert.strictEqual(((await ready.json()) as { checks: { database: string } }).checks.database, "unreachable")
    assert.match(await smtpSend(1), /^451 .*4\.3\.0/)
    assert.deepStrictEqual(await mcpCall(), { status: 200, isError: true, code: "service_unavailable" })

    pg.start()
    let readyAgain = false
    for (let i = 0; i < 100 && !readyAgain; i++) {
      readyAgain = (await fetch(`${server.url}/ready`)).status === 200
      if (!readyAgain) await new Promise((r) => setTimeout(r, 100))
    }
    assert.isTrue(readyAgain, "/ready is ready again within 10 s")
    const after = await Promise.all(requests(9))
    assert.deepStrictEqual(after.map((a) => a.status), [200, 401, 200, 401], JSON.stringify(after))
    assert.strictEqual(await smtpSend(9), "250")
    assert.deepStrictEqual((await mcpCall()).isError, false)

    // The probe logs the return within its interval of the first answer.
    await new Promise((r) => setTimeout(r, 1000))
    const lines = logLines(server)
    const went = lines.filter((l) => messageOf(l) === "database unreachable")
    const returned = lines.filter((l) => messageOf(l) === "database reachable again")
    assert.strictEqual(went.length, 1, JSON.stringify(went))
    assert.strictEqual(returned.length, 1, JSON.stringify(returned))
    assert.strictEqual(went[0]?.level, "WARN")
    assert.isAbove(Number(returned[0]?.annotations["down_ms"]), 0)
    const faults = lines.filter((l) => l.level === "ERROR" || (l.level === "WARN" && l !== went[0]))
    assert.deepStrictEqual(faults, [], "no request failed, no background loop warned")
    assert.notInclude(server.stdout(), "    at ", "no stack trace")
  })
})
