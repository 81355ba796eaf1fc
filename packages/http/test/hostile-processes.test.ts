/**
 * Hostile clients against a real server process (issue 24), on PGlite and PostgreSQL:
 * - four bodies nested as deep as `/auth`'s 16 KB allows, in flight at once: each is 400
 *   and `/health` answers meanwhile;
 * - many uploads at once to `/inbound/raw`: without the secret they are refused before their
 *   bodies are read, with it they are held to the intake budget; the server's resident
 *   memory (read from /proc) stays within the budget;
 * - WebSocket subscribers at their caps (per key: close 4029, per process: close 1013) leave
 *   HTTP its own connections.
 */
import { assert, describe, it } from "@effect/vitest"
import { createOrganization, pgliteStorage, POSTGRES_ENV, postgresStorage, serverEnv, startServer, TEST_INBOUND_SECRET } from "@inbox/testkit"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import WebSocket from "ws"

const url = process.env[POSTGRES_ENV]

const rssBytes = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "0") * 1024

const MIB = 1024 * 1024

interface Answer {
  readonly status: number
  readonly text: string
}

/**
 * A POST whose headers go first; the body follows `waitMs` later unless the server has
 * answered by then (a refusal needs only the headers: the wait is long enough for a busy
 * machine to answer, so a refused client never starts writing into a closed connection),
 * and its last byte `holdMs` after that. Resolves with the answer (status 0: the connection failed without one).
 */
const post = (
  base: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  options: { readonly waitMs?: number; readonly holdMs?: number; readonly abortAfterMs?: number } = {}
): Promise<Answer> =>
  new Promise((resolve) => {
    const target = new URL(path, base)
    let answered = false
    const req = httpRequest({ hostname: target.hostname, port: target.port, path: target.pathname + target.search, method: "POST", headers }, (res) => {
      answered = true
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") })
        req.destroy()
      })
      res.on("error", () => resolve({ status: res.statusCode ?? 0, text: "" }))
    })
    req.on("error", () => {
      if (!answered) resolve({ status: 0, text: "" })
    })
    req.flushHeaders()
    setTimeout(() => {
      if (answered) return
      req.write(body.subarray(0, body.length - 1))
      if (options.abortAfterMs !== undefined) {
        // Never finished: the upload is given up, as a client that went away.
        setTimeout(() => {
          if (!answered) req.destroy()
        }, options.abortAfterMs)
        return
      }
      setTimeout(() => {
        if (!answered) req.end(body.subarray(body.length - 1))
      }, options.holdMs ?? 0)
    }, options.waitMs ?? 0)
  })

const storagesHere = () => [
  { name: "PGlite", make: pgliteStorage },
  ...(url !== undefined && url !== "" ? [{ name: "PostgreSQL", make: () => postgresStorage(url) }] : [])
]

for (const storage of storagesHere()) {
  describe(`hostile clients against a server process (${storage.name})`, { timeout: 300_000 }, () => {
    it.live("four /auth bodies nested as deep as 16 KB allows, in flight at once, are each 400 bad_request, and /health answers meanwhile", () =>
      Effect.promise(async () => {
        const store = await storage.make()
        const server = await startServer(serverEnv(store.env))
        try {
          const deep = Buffer.from("[".repeat(8000) + "]".repeat(8000))
          const headers = { "content-type": "application/json", "content-length": String(deep.length), origin: server.url }
          // The bodies arrive but for their last byte; /health is asked while all four are in flight.
          const deepAnswers = Array.from({ length: 4 }, () => post(server.url, "/auth/sign-in", headers, deep, { holdMs: 300 }))
          const health = await fetch(`${server.url}/health`)
          assert.strictEqual(health.status, 200)
          for (const answer of await Promise.all(deepAnswers)) {
            assert.strictEqual(answer.status, 400, answer.text)
            assert.strictEqual(JSON.parse(answer.text).code, "bad_request")
          }
        } finally {
          await server.stop()
          await store.done()
        }
      }))

    it.live("uploads to /inbound/raw without the secret are refused before their bodies are read, and those with it are held to the intake budget: memory stays within it", () =>
      Effect.promise(async () => {
        const store = await storage.make()
        const budgetMb = 64
        const env = serverEnv({ ...store.env, INBOX_INBOUND_SECRET: TEST_INBOUND_SECRET, INBOX_INTAKE_MEMORY_MB: String(budgetMb) })
        const { api_key: key } = await createOrganization(env)
        const server = await startServer(env)
        try {
          const inbox = await (await fetch(`${server.url}/v0/inboxes`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: "{}" })).json() as { email: string }
          const pid = server.child.pid!
          const before = rssBytes(pid)
          const body = Buffer.alloc(30 * MIB, "x")
          const path = `/inbound/raw?to=${encodeURIComponent(inbox.email)}`
          const length = { "content-type": "message/rfc822", "content-length": String(body.length) }
          // Ten without the secret: 401, whatever they send.
          const refused = await Promise.all(Array.from({ length: 10 }, () => post(server.url, path, length, body, { waitMs: 1500 })))
          assert.deepStrictEqual(refused.map((a) => a.status), Array(10).fill(401))
          // Twelve with it, held open but for their last byte and then given up: two fit the
          // budget; the others are told to retry at once. Memory is read while they are held.
          let peak = 0
          const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 50)
          const held = await Promise.all(Array.from({ length: 12 }, () =>
            post(server.url, path, { ...length, "x-inbound-secret": TEST_INBOUND_SECRET }, body, { waitMs: 1500, abortAfterMs: 2000 })))
          clearInterval(sampler)
          const statuses = held.map((a) => a.status)
          assert.strictEqual(statuses.filter((s) => s === 503).length, 10, JSON.stringify(statuses))
          // The two admitted were still arriving when they were given up: no answer.
          assert.strictEqual(statuses.filter((s) => s === 0).length, 2, JSON.stringify(statuses))
          const grown = (peak - before) / MIB
          // Twelve uploads of 30 MB unbounded would hold 360 MB; within the budget, the two
          // admitted bodies (and the buffers that carried them).
          assert.isBelow(grown, budgetMb * 2, `RSS grew by ${grown.toFixed(0)} MB`)
          const health = await fetch(`${server.url}/health`)
          assert.strictEqual(health.status, 200)
        } finally {
          await server.stop()
          await store.done()
        }
      }))

    it.live("WebSocket subscribers at their caps are closed with 4029 (per key) and 1013 (per process), and HTTP keeps its connections", () =>
      Effect.promise(async () => {
        const store = await storage.make()
        const env = serverEnv({ ...store.env, INBOX_MAX_CONNECTIONS: "8", INBOX_MAX_WEBSOCKETS: "10", INBOX_MAX_WEBSOCKETS_PER_KEY: "6" })
        const a = await createOrganization(env, "a@example.com")
        const b = await createOrganization(env, "b@example.com")
        const server = await startServer(env)
        const sockets: Array<WebSocket> = []
        const open = (key: string) =>
          new Promise<{ opened: boolean; code?: number; reason?: string }>((resolve) => {
            const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/v0/websocket?api_key=${key}`)
            sockets.push(ws)
            let opened = false
            ws.on("open", () => {
              opened = true
              // Held open a moment: a cap closes at once; a socket still open by then was admitted.
              setTimeout(() => resolve({ opened }), 300)
            })
            ws.on("close", (code, reason) => resolve({ opened, code, reason: reason.toString() }))
            ws.on("error", () => resolve({ opened: false }))
          })
        try {
          for (let i = 0; i < 6; i++) assert.deepStrictEqual(await open(a.api_key), { opened: true })
          const keyFull = await open(a.api_key)
          assert.strictEqual(keyFull.code, 4029, JSON.stringify(keyFull))
          for (let i = 0; i < 4; i++) assert.deepStrictEqual(await open(b.api_key), { opened: true })
          const serverFull = await open(b.api_key)
          assert.strictEqual(serverFull.code, 1013, JSON.stringify(serverFull))
          // Ten subscribers hold their connections (more than HTTP's eight); four new HTTP
          // connections at once still get answers.
          const answers = await Promise.all(Array.from({ length: 4 }, () =>
            new Promise<number>((resolve) => {
              const req = httpRequest(`${server.url}/v0/pods`, { headers: { authorization: `Bearer ${a.api_key}`, connection: "close" } }, (res) => {
                res.resume()
                res.on("end", () => resolve(res.statusCode ?? 0))
              })
              req.on("error", () => resolve(0))
              req.end()
            })))
          assert.deepStrictEqual(answers, [200, 200, 200, 200])
        } finally {
          for (const ws of sockets) ws.terminate()
          await server.stop()
          await store.done()
        }
      }))
  })
}
