/**
 * IMAP across two server processes on one PostgreSQL (issue 28, Proof): two real
 * `inboxctl serve` processes with INBOX_IMAP_LISTEN share a fresh database. A client idling
 * on one process hears, within a second, a message appended through the other process and
 * a flag set there, with a MODSEQ above the HIGHESTMODSEQ it had (CONDSTORE); and appends
 * through both processes at once get distinct UIDs, each above the UIDs given before, as both
 * processes see them. PostgreSQL only (PGlite is one process).
 */
import { assert, layer } from "@effect/vitest"
import { createOrganization, freePort, freshDatabase, POSTGRES_ENV, serverEnv, startServer } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { ImapFlow } from "imapflow"

const url = process.env[POSTGRES_ENV]

const connect = async (port: number, user: string, pass: string) => {
  const c = new ImapFlow({ host: "127.0.0.1", port, secure: false, doSTARTTLS: false, auth: { user, pass }, logger: false })
  await c.connect()
  return c
}

const message = (to: string, subject: string) => `From: friend@example.net\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, "")}@example.net>\r\n\r\n${subject}\r\n`

if (url !== undefined && url !== "") {
  layer(Layer.empty, { timeout: "300 seconds" })("IMAP on two server processes on one PostgreSQL", (it) => {
    it.effect("IDLE on one process hears an APPEND and a flag change made through the other within a second, the change raising HIGHESTMODSEQ; concurrent appends get distinct, increasing UIDs", () =>
      Effect.promise(async () => {
        const db = await freshDatabase(url, "imapproc")
        const [portA, portB] = [await freePort(), await freePort()]
        try {
          const base = { INBOX_DATABASE_URL: db.url, INBOX_IMAP_ALLOW_PLAIN_LOOPBACK: "1" }
          const { api_key: key } = await createOrganization(serverEnv(base))
          const [a, b] = await Promise.all([
            startServer(serverEnv({ ...base, INBOX_IMAP_LISTEN: `127.0.0.1:${portA}` })),
            startServer(serverEnv({ ...base, INBOX_IMAP_LISTEN: `127.0.0.1:${portB}` }))
          ])
          try {
            const inbox = await (await fetch(`${a.url}/v0/inboxes`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
              body: JSON.stringify({ username: "idler" })
            })).json() as { email: string }
            const idler = await connect(portA, inbox.email, key)
            const writer = await connect(portB, inbox.email, key)
            try {
              const lock = await idler.getMailboxLock("INBOX")
              const events: Array<{ kind: string; at: number; modseq?: bigint }> = []
              idler.on("exists", () => events.push({ kind: "exists", at: Date.now() }))
              idler.on("flags", (data: { modseq?: bigint }) => events.push({ kind: "flags", at: Date.now(), ...(data.modseq === undefined ? {} : { modseq: BigInt(data.modseq) }) }))
              void idler.idle()
              await new Promise((r) => setTimeout(r, 500))

              const appendedAt = Date.now()
              const appended = await writer.append("INBOX", message(inbox.email, "Through B"))
              assert.isTrue(appended !== false)
              for (let i = 0; i < 40 && !events.some((e) => e.kind === "exists"); i++) await new Promise((r) => setTimeout(r, 50))
              const exists = events.find((e) => e.kind === "exists")
              assert.isDefined(exists, "the idling client on A heard of the message appended through B")
              assert.isBelow(exists!.at - appendedAt, 1_000)

              const writerLock = await writer.getMailboxLock("INBOX")
              // What process A tells before the change B makes (a third session: the idler stays idle).
              const reader = await connect(portA, inbox.email, key)
              const statusOf = async () => {
                const status = await reader.status("INBOX", { highestModseq: true })
                return status === false ? -1n : BigInt(status.highestModseq ?? -1n)
              }
              const highestBefore = await statusOf()
              assert.isTrue(highestBefore > 0n, "A answers HIGHESTMODSEQ")
              const flaggedAt = Date.now()
              await writer.messageFlagsAdd("1:*", ["\\Flagged"])
              for (let i = 0; i < 40 && !events.some((e) => e.kind === "flags"); i++) await new Promise((r) => setTimeout(r, 50))
              const flags = events.find((e) => e.kind === "flags")
              assert.isDefined(flags, "the idling client on A heard of the flag set through B")
              assert.isBelow(flags!.at - flaggedAt, 1_000)
              assert.isTrue(flags!.modseq !== undefined && flags!.modseq > highestBefore, `the idler on A was told the new MODSEQ: ${flags!.modseq} > ${highestBefore}`)
              const highestAfter = await statusOf()
              assert.isTrue(highestAfter >= flags!.modseq! && highestAfter > highestBefore, `A's HIGHESTMODSEQ rose with B's change: ${highestBefore} -> ${highestAfter}`)
              await reader.logout()
              writerLock.release()
              lock.release()

              // Appends through both processes at once.
              const other = await connect(portA, inbox.email, key)
              const results = await Promise.all([
                ...Array.from({ length: 5 }, (_, i) => writer.append("INBOX", message(inbox.email, `B ${i}`))),
                ...Array.from({ length: 5 }, (_, i) => other.append("INBOX", message(inbox.email, `A ${i}`)))
              ])
              const uids = results.map((r) => (r === false ? 0 : r.uid ?? 0))
              assert.strictEqual(new Set(uids).size, 10, `distinct UIDs: ${uids.join(",")}`)
              assert.isTrue(uids.every((u) => u > 1), "each above the UID given before")
              await other.logout()
            } finally {
              await idler.logout().catch(() => undefined)
              await writer.logout().catch(() => undefined)
            }
          } finally {
            await Promise.all([a.stop(), b.stop()])
          }
        } finally {
          await db.drop()
        }
      }))
  })
}
