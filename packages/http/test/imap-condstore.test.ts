/**
 * CONDSTORE (RFC 7162 section 3.1) on the IMAP server, through real clients on PGlite and
 * PostgreSQL: imapflow (which enables it when offered) and Python's imaplib (raw commands).
 * SELECT answers HIGHESTMODSEQ, which grows when mail arrives, a label changes through the
 * API or another session stores a flag; FETCH (CHANGEDSINCE n) answers only what changed;
 * STORE (UNCHANGEDSINCE n) leaves a message changed since as it is and names it in
 * [MODIFIED]; SEARCH MODSEQ and its (MODSEQ n) answer; an idling CONDSTORE client hears a
 * flag change with its MODSEQ. Across two server processes: imap-processes.test.ts.
 */
import { assert, layer } from "@effect/vitest"
import { ImapServer } from "@inbox/mailserver"
import { deliverMail, engineLayer, mailClientWorld, storages, TEST_INBOUND_SECRET, TestApp, type TestMail } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { connect } from "node:net"
import type { ImapFlow } from "imapflow"
import { imapflowClient as client, python } from "./imap-clients.ts"

const setUp = Effect.gen(function*() {
  const { app, org, inbox, key } = yield* mailClientWorld
  const port = (yield* ImapServer).port
  const deliver = (mail: TestMail = {}) => deliverMail(inbox.email, mail)
  const messages = () =>
    Effect.map(app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages`, { key: org.key }), (r) => r.body.messages as Array<{ message_id: string; subject: string; labels: Array<string> }>)
  const label = (id: string, add: ReadonlyArray<string>) => app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${id}`, { key: org.key, json: { add_labels: add } })
  return { app, org, inbox, key, port, deliver, messages, label }
})


/** HIGHESTMODSEQ of INBOX as STATUS tells it. */
const highest = (c: ImapFlow) =>
  Effect.promise(async () => {
    const status = await c.status("INBOX", { highestModseq: true })
    return status === false ? -1n : BigInt(status.highestModseq ?? -1n)
  })

for (const storage of storages()) {
  const server = ImapServer.layer({ host: "127.0.0.1", port: 0, allowPlainLoopback: true, idlePollMs: 600_000 })
  layer(server.pipe(Layer.provideMerge(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))))), { timeout: "180 seconds" })(
    `IMAP CONDSTORE (${storage.name})`,
    (it) => {
      it.effect("CONDSTORE is listed and enabled; SELECT answers HIGHESTMODSEQ, which grows when mail arrives, a label changes through the API and another session stores a flag", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "First", text: "one" })
          const c = yield* client(w.port, w.inbox.email, w.key)
          const other = yield* client(w.port, w.inbox.email, w.key)
          assert.isTrue(c.capabilities.has("CONDSTORE"))
          assert.isTrue(c.enabled.has("CONDSTORE"))
          const opened = yield* Effect.promise(() => c.mailboxOpen("INBOX"))
          assert.isTrue(typeof opened.highestModseq === "bigint" && opened.highestModseq > 0n, String(opened.highestModseq))
          const first = yield* Effect.promise(() => c.fetchOne("1", { uid: true, flags: true }))
          assert.isTrue(first !== false && BigInt(first.modseq!) <= opened.highestModseq!, "a message's MODSEQ is at most HIGHESTMODSEQ")
          yield* Effect.promise(() => c.mailboxClose())

          const h0 = yield* highest(c)
          yield* w.deliver({ subject: "Second", text: "two" })
          const h1 = yield* highest(c)
          assert.isTrue(h1 > h0, `mail arrived: ${h0} -> ${h1}`)

          const [message] = yield* w.messages()
          yield* w.label(message!.message_id, ["receipts"])
          const h2 = yield* highest(c)
          assert.isTrue(h2 > h1, `a label changed through the API: ${h1} -> ${h2}`)

          yield* Effect.promise(async () => {
            const lock = await other.getMailboxLock("INBOX")
            await other.messageFlagsAdd("1", ["$Reviewed"])
            lock.release()
          })
          const h3 = yield* highest(c)
          assert.isTrue(h3 > h2, `another session stored a flag: ${h2} -> ${h3}`)

          const reopened = yield* Effect.promise(() => c.mailboxOpen("INBOX"))
          assert.strictEqual(reopened.highestModseq, h3)
        }))

      it.effect("FETCH (CHANGEDSINCE n) answers only the messages changed since n, each with its MODSEQ", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          for (const subject of ["One", "Two", "Three"]) yield* w.deliver({ subject, text: subject })
          const c = yield* client(w.port, w.inbox.email, w.key)
          const other = yield* client(w.port, w.inbox.email, w.key)
          const opened = yield* Effect.promise(() => c.mailboxOpen("INBOX"))
          const since = opened.highestModseq!
          const all = yield* Effect.promise(async () => {
            const out = []
            for await (const m of c.fetch("1:*", { uid: true, flags: true, envelope: true })) out.push(m)
            return out
          })
          assert.strictEqual(all.length, 3)
          assert.isTrue(all.every((m) => m.modseq !== undefined && BigInt(m.modseq) <= since))
          const two = all.find((m) => m.envelope?.subject === "Two")!
          assert.deepStrictEqual(yield* Effect.promise(async () => {
            const out = []
            for await (const m of c.fetch("1:*", { uid: true, flags: true }, { uid: true, changedSince: since })) out.push(m)
            return out
          }), [], "nothing changed yet")

          yield* Effect.promise(async () => {
            const lock = await other.getMailboxLock("INBOX")
            await other.messageFlagsAdd(String(two.uid), ["\\Flagged"], { uid: true })
            lock.release()
          })
          const changed = yield* Effect.promise(async () => {
            const out = []
            for await (const m of c.fetch("1:*", { uid: true, flags: true }, { uid: true, changedSince: since })) out.push(m)
            return out
          })
          assert.deepStrictEqual(changed.map((m) => m.uid), [two.uid], JSON.stringify(changed, (_k, v) => typeof v === "bigint" ? String(v) : v instanceof Set ? [...v] : v))
          assert.isTrue(changed[0]!.flags!.has("\\Flagged"))
          assert.isTrue(BigInt(changed[0]!.modseq!) > since)

          // imaplib: a plain FETCH with the modifier implies MODSEQ in each answer.
          const out = yield* python(`
import imaplib, sys
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
m.login(sys.argv[2], sys.argv[3])
m.select("INBOX")
typ, data = m.fetch("1:*", "(FLAGS) (CHANGEDSINCE %s)" % sys.argv[4])
print(typ)
for d in data:
    print(d.decode() if d else "")
`, [String(w.port), w.inbox.email, w.key, String(since)])
          assert.strictEqual(out.code, 0, out.stderr)
          const lines = out.stdout.trim().split("\n")
          assert.strictEqual(lines[0], "OK")
          assert.strictEqual(lines.length, 2, out.stdout)
          assert.match(lines[1]!, /^\d+ \(FLAGS \([^)]*\\Flagged[^)]*\) MODSEQ \(\d+\)\)$/)
        }))

      it.effect("STORE (UNCHANGEDSINCE n) leaves a message changed since n as it is and names it in [MODIFIED]; the others are stored (imaplib)", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "Stale", text: "a" })
          yield* w.deliver({ subject: "Fresh", text: "b" })
          const out = yield* python(`
import imaplib, sys, re
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
m.login(sys.argv[2], sys.argv[3])
m.enable("CONDSTORE")
m.select("INBOX")
since = int(m.untagged_responses["HIGHESTMODSEQ"][0])
typ, data = m.uid("SEARCH", "ALL")
a, b = data[0].split()
other = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
other.login(sys.argv[2], sys.argv[3])
other.select("INBOX")
print(other.uid("STORE", a, "+FLAGS", "(\\\\Answered)")[0])
typ, data = m.uid("STORE", "%s,%s" % (a.decode(), b.decode()), "(UNCHANGEDSINCE %d) +FLAGS (\\\\Flagged)" % since)
print(typ, m.untagged_responses.get("MODIFIED", [b""])[0].decode(), a.decode(), b.decode())
for d in data:
    print("S", d.decode() if d else "")
typ, data = m.uid("FETCH", "%s,%s" % (a.decode(), b.decode()), "(FLAGS)")
for d in data:
    print("F", d.decode())
`, [String(w.port), w.inbox.email, w.key])
          assert.strictEqual(out.code, 0, out.stderr)
          const lines = out.stdout.trim().split("\n")
          assert.strictEqual(lines[0], "OK")
          const [typ, modified, stale, fresh] = lines[1]!.split(" ") as [string, string, string, string]
          assert.strictEqual(typ, "OK")
          assert.strictEqual(modified, stale, "the message another session changed is named in MODIFIED")
          const answered = lines.filter((l) => l.startsWith("S ")).join("\n")
          assert.match(answered, new RegExp(`UID ${fresh} FLAGS \\([^)]*\\\\Flagged[^)]*\\) MODSEQ \\(\\d+\\)`), "the stored one is answered with its new MODSEQ")
          assert.notMatch(answered, new RegExp(`UID ${stale} FLAGS \\([^)]*Flagged`))
          const now = (uid: string) => lines.find((l) => l.startsWith("F ") && l.includes(`UID ${uid} `))!
          assert.include(now(fresh), "\\Flagged")
          assert.notInclude(now(stale), "\\Flagged", "the stale store left it as it was")
          assert.include(now(stale), "\\Answered")
        }))

      it.effect("SEARCH MODSEQ n finds the messages changed at n or after and ends with (MODSEQ highest); ESEARCH answers MODSEQ (imaplib)", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "Old", text: "a" })
          yield* w.deliver({ subject: "Touched", text: "b" })
          const out = yield* python(`
import imaplib, sys
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
m.login(sys.argv[2], sys.argv[3])
m.select("INBOX")
typ, data = m.uid("SEARCH", "ALL")
a, b = data[0].split()
typ, data = m.uid("FETCH", a, "(MODSEQ)")
before = int(data[0].decode().split("MODSEQ (")[1].split(")")[0])
typ, data = m.uid("STORE", b, "+FLAGS", "(\\\\Seen)")
after = int(data[0].decode().split("MODSEQ (")[1].split(")")[0])
typ, data = m.uid("SEARCH", "MODSEQ", str(before + 1))
print(data[0].decode())
print(b.decode(), after)
typ, data = m.uid("SEARCH", "MODSEQ", '"/flags/\\\\draft"', "all", str(before))
print(data[0].decode())
typ, data = m.uid("SEARCH", "RETURN", "(ALL)", "MODSEQ", str(before + 1))
print(m.untagged_responses.get("ESEARCH", [b""])[0].decode())
`, [String(w.port), w.inbox.email, w.key])
          assert.strictEqual(out.code, 0, out.stderr)
          const [found, expected, withEntry, esearch] = out.stdout.trim().split("\n")
          const [uid, after] = expected!.split(" ") as [string, string]
          assert.strictEqual(found, `${uid} (MODSEQ ${after})`)
          assert.match(withEntry!, new RegExp(`^\\d+ ${uid} \\(MODSEQ ${after}\\)$`), "with an entry name and type, the same test")
          assert.match(esearch!, new RegExp(`UID ALL ${uid} MODSEQ ${after}$`))
        }))

      it.effect("mailboxes.flags with unchanged_since (REST) changes only the messages not changed since, and answers the others in modified", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "A", text: "a" })
          yield* w.deliver({ subject: "B", text: "b" })
          const base = `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/INBOX`
          const state = (yield* w.app.request("POST", `${base}/sync`, { key: w.org.key, json: {} })).body as { highest_modseq: number; messages: Array<{ uid: number; message_id: string; modseq: number }> }
          assert.isTrue(state.messages.every((m) => m.modseq <= state.highest_modseq))
          const [a, b] = state.messages
          yield* w.label(a!.message_id, ["receipts"])
          const answer = yield* w.app.request("POST", `${base}/flags`, { key: w.org.key, json: { uids: [a!.uid, b!.uid], add: ["\\Flagged"], unchanged_since: state.highest_modseq } })
          assert.strictEqual(answer.status, 200, JSON.stringify(answer.body))
          const body = answer.body as { modified: Array<number>; highest_modseq: number; messages: Array<{ uid: number; flags: Array<string>; modseq: number }> }
          assert.deepStrictEqual(body.modified, [a!.uid])
          const byUid = new Map(body.messages.map((m) => [m.uid, m]))
          assert.notInclude(byUid.get(a!.uid)!.flags, "\\Flagged")
          assert.include(byUid.get(b!.uid)!.flags, "\\Flagged")
          assert.isAbove(byUid.get(b!.uid)!.modseq, state.highest_modseq)
          assert.isAtLeast(body.highest_modseq, Math.max(...body.messages.map((m) => m.modseq)))
        }))

      it.effect("conditional stores run beside label changes through the API and keyword stores on the same messages without failing: each is answered", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          for (const subject of ["A", "B", "C"]) yield* w.deliver({ subject, text: subject })
          const base = `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/INBOX`
          const state = (yield* w.app.request("POST", `${base}/sync`, { key: w.org.key, json: {} })).body as { highest_modseq: number; messages: Array<{ uid: number; message_id: string }> }
          const uids = state.messages.map((m) => m.uid)
          const answers = yield* Effect.all(Array.from({ length: 8 }, (_, i) => [
            w.app.request("POST", `${base}/flags`, { key: w.org.key, json: { uids, add: ["\\Flagged", `$c${i}`], unchanged_since: state.highest_modseq + i } }),
            w.app.request("POST", `${base}/flags`, { key: w.org.key, json: { uids, add: [`$k${i}`] } }),
            w.label(state.messages[i % 3]!.message_id, [`l${i}`])
          ]).flat(), { concurrency: "unbounded" })
          assert.deepStrictEqual(answers.map((r) => r.status), answers.map(() => 200), JSON.stringify(answers.filter((r) => r.status !== 200).map((r) => r.body)))
        }))

      it.effect("IDLE: once CONDSTORE is enabled (SELECT ... (CONDSTORE)), a flag another session stores reaches the idling client as FETCH with FLAGS and MODSEQ", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "Watch me", text: "x" })
          const other = yield* client(w.port, w.inbox.email, w.key)
          const socket = connect({ host: "127.0.0.1", port: w.port })
          yield* Effect.addFinalizer(() => Effect.sync(() => socket.destroy()))
          let text = ""
          socket.on("data", (chunk: Buffer) => void (text += chunk.toString("latin1")))
          const until = (test: RegExp) =>
            Effect.promise(async () => {
              for (let i = 0; i < 100; i++) {
                const m = test.exec(text)
                if (m !== null) return m
                await new Promise((r) => setTimeout(r, 50))
              }
              return null
            })
          yield* until(/\* OK[^\n]*\n/)
          socket.write(`a LOGIN ${w.inbox.email} ${w.key}\r\nb SELECT INBOX (CONDSTORE)\r\n`)
          const selected = yield* until(/\* OK \[HIGHESTMODSEQ (\d+)\][^\n]*\n[^]*b OK[^\n]*\n/)
          assert.isNotNull(selected, text)
          const since = Number(selected![1])
          socket.write("c IDLE\r\n")
          assert.isNotNull(yield* until(/\+ [^\n]*\n/))
          yield* Effect.promise(async () => {
            const lock = await other.getMailboxLock("INBOX")
            await other.messageFlagsAdd("1", ["\\Flagged"])
            lock.release()
          })
          const pushed = yield* until(/\* 1 FETCH \(UID \d+ FLAGS \(([^)]*)\) MODSEQ \((\d+)\)\)\r\n/)
          assert.isNotNull(pushed, text)
          assert.include(pushed![1], "\\Flagged")
          assert.isAbove(Number(pushed![2]), since)
          socket.write("DONE\r\n")
          assert.isNotNull(yield* until(/c OK[^\n]*\n/))
        }))
    }
  )
}
