/**
 * The IMAP server (docs/mail-servers.md, "IMAP and SMTP submission"), through real clients:
 * imapflow (npm) and Python's imaplib (the system's python3), on PGlite and PostgreSQL.
 * Sign-in with the inbox's address and a key scoped to it (a key of another inbox refused
 * with NO [AUTHENTICATIONFAILED]); LIST with SPECIAL-USE; SELECT; FETCH of flags, envelope,
 * body structure and BODY[] byte-identical to the API's raw message, and partial fetches;
 * flags as labels both ways; SEARCH answered by the engine's search, every match of it; UIDs strictly
 * increasing with UIDPLUS answers; COPY, MOVE, EXPUNGE to trash; APPEND to a mailbox, to
 * Sent (a copy of a submitted message adds nothing) and to Drafts (a draft the API sees);
 * CREATE of a label mailbox; IDLE told of mail delivered through the API within a second.
 * Debian's mbsync is imap-mbsync.test.ts.
 */
import { assert, it, layer } from "@effect/vitest"
import { ImapServer } from "@inbox/mailserver"
import { deliverMail, engineLayer, mailClientWorld, selfSignedCertificate, storages, TEST_INBOUND_SECRET, TestApp, type TestMail } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { connect } from "node:net"
import { imapflowClient as client, python } from "./imap-clients.ts"

const certificate = selfSignedCertificate("mail.inbox.localhost")

const setUp = Effect.gen(function*() {
  const { app, org, inbox, other, key } = yield* mailClientWorld
  const port = (yield* ImapServer).port
  const deliver = (mail: TestMail = {}) => deliverMail(inbox.email, mail)
  const messages = (query = "") =>
    Effect.map(app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages${query}`, { key: org.key }), (r) => r.body.messages as Array<{ message_id: string; subject: string; labels: Array<string> }>)
  const raw = (id: string) => Effect.map(app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${id}/raw/download`, { key: org.key }), (r) => r.text)
  return { app, org, inbox, other, key, port, deliver, messages, raw }
})


interface IdleSession {
  readonly socket: ReturnType<typeof connect>
  /** EXISTS when the mailbox was selected. */
  readonly exists: number
  /** Resolves with n at the next `* n EXISTS`. */
  nextExists(): Promise<number>
}

/** A bare IMAP connection signed in, INBOX selected and idling: a hundred cost little. */
const idleSession = (port: number, user: string, pass: string): Promise<IdleSession> =>
  new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port })
    let text = ""
    let waiter: ((text: string) => boolean) | undefined
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1")
      if (waiter?.(text) === true) waiter = undefined
    })
    socket.on("error", reject)
    const until = (test: RegExp) =>
      new Promise<RegExpExecArray>((done) => {
        const check = (t: string) => {
          const m = test.exec(t)
          if (m === null) return false
          text = t.slice(m.index + m[0].length)
          done(m)
          return true
        }
        if (!check(text)) waiter = check
      })
    void (async () => {
      await until(/\* OK[^\n]*\n/)
      socket.write(`a LOGIN ${user} ${pass}\r\n`)
      await until(/a OK[^\n]*\n/)
      socket.write("b SELECT INBOX\r\n")
      const exists = Number((await until(/\* (\d+) EXISTS\r\n/))[1])
      await until(/b OK[^\n]*\n/)
      socket.write("c IDLE\r\n")
      await until(/\+ [^\n]*\n/)
      resolve({ socket, exists, nextExists: () => until(/\* (\d+) EXISTS\r\n/).then((m) => Number(m[1])) })
    })().catch(reject)
  })

for (const storage of storages()) {
  // No IDLE poll within a test's time: an idling client hears of changes through the engine's signal alone.
  const server = ImapServer.layer({ host: "127.0.0.1", port: 0, allowPlainLoopback: true, idlePollMs: 600_000 })
  layer(server.pipe(Layer.provideMerge(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))))), { timeout: "180 seconds" })(
    `IMAP (${storage.name})`,
    (it) => {
      it.effect("sign-in with the inbox's address and a key scoped to it; a key of another inbox or a wrong key is NO [AUTHENTICATIONFAILED]", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const ok = yield* python(`
import imaplib, sys
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
print(m.login(sys.argv[2], sys.argv[3])[0])
for user in (sys.argv[4], sys.argv[2]):
    c = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
    try:
        c.login(user, sys.argv[3] if user == sys.argv[4] else "am_wrong")
        print("accepted")
    except imaplib.IMAP4.error as e:
        print(str(e))
`, [String(w.port), w.inbox.email, w.key, w.other.email])
          assert.strictEqual(ok.code, 0, ok.stderr)
          const lines = ok.stdout.trim().split("\n")
          assert.strictEqual(lines[0], "OK")
          assert.include(lines[1], "[AUTHENTICATIONFAILED]")
          assert.include(lines[2], "[AUTHENTICATIONFAILED]")
        }))

      it.effect("wrong keys are counted like dashboard passwords: past ten for one user name, even the right key is NO [UNAVAILABLE] for a while", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const out = yield* python(`
import imaplib, sys
answers = []
for key in ["am_wrong"] * 10 + [sys.argv[3]]:
    c = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
    try:
        c.login(sys.argv[2], key)
        answers.append("OK")
    except imaplib.IMAP4.error as e:
        answers.append("UNAVAILABLE" if "[UNAVAILABLE]" in str(e) else "AUTHENTICATIONFAILED" if "[AUTHENTICATIONFAILED]" in str(e) else str(e))
print(" ".join(answers))
`, [String(w.port), w.inbox.email, w.key])
          assert.strictEqual(out.code, 0, out.stderr)
          assert.strictEqual(out.stdout.trim(), [...Array.from({ length: 10 }, () => "AUTHENTICATIONFAILED"), "UNAVAILABLE"].join(" "))
        }))

      it.effect("LIST shows INBOX, Sent, Drafts, Trash, Junk with SPECIAL-USE and each user label; CREATE Receipts makes the label receipts", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const c = yield* client(w.port, w.inbox.email, w.key)
          yield* Effect.promise(() => c.mailboxCreate("Receipts"))
          const boxes = yield* Effect.promise(() => c.list())
          const byPath = new Map(boxes.map((b) => [b.path, b.specialUse ?? null]))
          assert.strictEqual(byPath.get("INBOX"), "\\Inbox")
          assert.strictEqual(byPath.get("Sent"), "\\Sent")
          assert.strictEqual(byPath.get("Drafts"), "\\Drafts")
          assert.strictEqual(byPath.get("Trash"), "\\Trash")
          assert.strictEqual(byPath.get("Junk"), "\\Junk")
          assert.isTrue(byPath.has("receipts"), JSON.stringify([...byPath]))
        }))

      it.effect("FETCH: BODY[] is byte-identical to the API's raw message; envelope, body structure, partial fetch and UIDs strictly increasing", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "First", text: "one" })
          yield* w.deliver({ subject: "Second", text: "two", attachments: [{ filename: "a.txt", content: "attached bytes" }] })
          const stored = yield* w.messages()
          const c = yield* client(w.port, w.inbox.email, w.key)
          const lock = yield* Effect.promise(() => c.getMailboxLock("INBOX"))
          const fetched = yield* Effect.promise(async () => {
            const out = []
            for await (const m of c.fetch("1:*", { uid: true, flags: true, envelope: true, bodyStructure: true, source: true, size: true, internalDate: true })) out.push(m)
            return out
          })
          assert.strictEqual(fetched.length, 2)
          assert.isBelow(fetched[0]!.uid, fetched[1]!.uid)
          const second = fetched.find((m) => m.envelope?.subject === "Second")!
          const id = stored.find((m) => m.subject === "Second")!.message_id
          const apiRaw = yield* w.raw(id)
          assert.strictEqual(second.source!.toString("utf8"), apiRaw)
          assert.strictEqual(second.size, Buffer.byteLength(apiRaw))
          assert.strictEqual(second.bodyStructure?.type, "multipart/mixed")
          assert.isFalse(second.flags?.has("\\Seen"), "new mail is unseen")
          const partial = yield* Effect.promise(() => c.fetchOne(String(second.uid), { bodyParts: ["TEXT"] }, { uid: true }))
          assert.isTrue((partial as { bodyParts?: Map<string, Buffer> }).bodyParts!.get("text")!.length > 0)
          const first10 = yield* Effect.promise(() => c.download(String(second.uid), undefined, { uid: true, maxBytes: 10 }))
          const chunks: Array<Buffer> = []
          yield* Effect.promise(async () => {
            for await (const chunk of first10.content!) chunks.push(chunk as Buffer)
          })
          assert.isAtMost(Buffer.concat(chunks).length, 10)
          lock.release()
        }))

      it.effect("flags are labels: \\Seen removes unread and \\Flagged adds starred, and a label set through the API shows as a flag", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "Flag me", text: "x" })
          const c = yield* client(w.port, w.inbox.email, w.key)
          const lock = yield* Effect.promise(() => c.getMailboxLock("INBOX"))
          yield* Effect.promise(() => c.messageFlagsAdd("1", ["\\Seen", "\\Flagged"]))
          const [message] = yield* w.messages()
          assert.notInclude(message!.labels, "unread")
          assert.include(message!.labels, "starred")
          yield* w.app.request("PATCH", `/v0/inboxes/${w.inbox.inbox_id}/messages/${message!.message_id}`, { key: w.org.key, json: { add_labels: ["unread"], remove_labels: ["starred"] } })
          const again = yield* Effect.promise(() => c.fetchOne("1", { flags: true }))
          assert.isFalse((again as { flags: Set<string> }).flags.has("\\Seen"))
          assert.isFalse((again as { flags: Set<string> }).flags.has("\\Flagged"))
          lock.release()
        }))

      it.effect("SEARCH SUBJECT, TEXT, FROM and UNSEEN are answered by the engine's search", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "Invoice March", text: "pay the invoice", from: "billing@shop.example" })
          yield* w.deliver({ subject: "Lunch", text: "sandwiches today", from: "friend@pals.example" })
          const c = yield* client(w.port, w.inbox.email, w.key)
          const lock = yield* Effect.promise(() => c.getMailboxLock("INBOX"))
          const all = yield* Effect.promise(async () => {
            const out = []
            for await (const m of c.fetch("1:*", { uid: true, envelope: true })) out.push(m)
            return out
          })
          const uidOf = (subject: string) => all.find((m) => m.envelope?.subject === subject)!.uid
          assert.deepStrictEqual(yield* Effect.promise(() => c.search({ subject: "invoice" }, { uid: true })), [uidOf("Invoice March")])
          assert.deepStrictEqual(yield* Effect.promise(() => c.search({ body: "sandwiches" }, { uid: true })), [uidOf("Lunch")])
          assert.deepStrictEqual(yield* Effect.promise(() => c.search({ from: "billing@shop.example" }, { uid: true })), [uidOf("Invoice March")])
          yield* Effect.promise(() => c.messageFlagsAdd(String(uidOf("Lunch")), ["\\Seen"], { uid: true }))
          assert.deepStrictEqual(yield* Effect.promise(() => c.search({ seen: false }, { uid: true })), [uidOf("Invoice March")])
          lock.release()
        }))

      it.effect("SEARCH of two words answers the messages holding both, in mailbox order, by sequence number and by UID, each time it is asked of the same mailbox (imaplib)", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          // Matches enough that ids (random) and mailbox order differ, as in a real mailbox.
          const mails = ["harbour ferry", "harbour only", "ferry only", "ferry to the harbour", "harbour by ferry", "the harbour ferry", "no ferry, no harbour", "neither"]
          for (const [i, text] of mails.entries()) yield* w.deliver({ subject: `mail ${i}`, text })
          // Asked three times of the same selected mailbox: no answer depends on what an earlier one left.
          const out = yield* python(`
import imaplib, sys
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
m.login(sys.argv[2], sys.argv[3])
m.select("INBOX")
for _ in range(3):
    print(m.search(None, "TEXT", "harbour", "BODY", "ferry")[1][0].decode())
    print(m.uid("SEARCH", "TEXT", "ferry", "TEXT", "harbour")[1][0].decode())
for part in m.fetch("1:*", "(UID BODY.PEEK[HEADER.FIELDS (SUBJECT)])")[1]:
    if isinstance(part, tuple):
        print(part[0].decode().split(" ")[0], part[0].decode().split("UID ")[1].split(" ")[0], part[1].decode().strip())
`, [String(w.port), w.inbox.email, w.key])
          assert.strictEqual(out.code, 0, out.stderr)
          const lines = out.stdout.trim().split("\n")
          // Mailbox order (sequence number, UID) of the mails holding both words, from the FETCH.
          const holding = lines.slice(6).map((l) => l.split(" ")).filter((l) => [0, 3, 4, 5, 6].includes(Number(l.at(-1))))
          assert.strictEqual(holding.length, 5)
          for (let round = 0; round < 3; round++) {
            assert.strictEqual(lines[2 * round], holding.map(([seq]) => seq).join(" "))
            assert.strictEqual(lines[2 * round + 1], holding.map(([, uid]) => uid).join(" "))
          }
          // The operation gives each match's UID in the mailbox beside its id.
          const res = yield* w.app.request("POST", `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/INBOX/search`, { key: w.org.key, json: { q: "harbour ferry" } })
          assert.strictEqual(res.status, 200, res.text)
          const { message_ids, uids } = res.body as { message_ids: Array<string>; uids: Array<number> }
          assert.strictEqual(message_ids.length, 5)
          assert.sameMembers(uids.map(String), holding.map(([, uid]) => uid!))
        }))

      it.effect("SEARCH TEXT returns every matching message of the mailbox, not only the newest 500 the ranked search shows; mailboxes.search pages them all", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const matching = 620
          yield* Effect.forEach(Array.from({ length: matching }, (_, i) => i), (i) =>
            Effect.flatMap(w.deliver({ subject: `Report ${i}`, text: `the harbour figures, part ${i}` }), (r) =>
              r.status === 200 ? Effect.void : Effect.die(new Error(`delivery: ${r.status} ${r.text}`))), { concurrency: 4, discard: true })
          yield* w.deliver({ subject: "Lunch", text: "sandwiches today" })
          const c = yield* client(w.port, w.inbox.email, w.key)
          const lock = yield* Effect.promise(() => c.getMailboxLock("INBOX"))
          const all = yield* Effect.promise(async () => {
            const out = []
            for await (const m of c.fetch("1:*", { uid: true, envelope: true })) out.push(m)
            return out
          })
          const expected = all.filter((m) => m.envelope?.subject?.startsWith("Report ")).map((m) => m.uid).sort((a, b) => a - b)
          assert.strictEqual(expected.length, matching)
          const found = (yield* Effect.promise(() => c.search({ text: "harbour" }, { uid: true }))) as Array<number>
          assert.deepStrictEqual([...found].sort((a, b) => a - b), expected)
          lock.release()

          // The operation behind it, in pages of 250 ids: every match once, then no token.
          const ids: Array<string> = []
          let token: string | undefined
          let pages = 0
          do {
            const res = yield* w.app.request("POST", `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/INBOX/search`, {
              key: w.org.key,
              json: { q: "harbour", limit: 250, ...(token === undefined ? {} : { page_token: token }) }
            })
            assert.strictEqual(res.status, 200, res.text)
            ids.push(...(res.body.message_ids as Array<string>))
            token = res.body.next_page_token as string | undefined
            pages++
          } while (token !== undefined)
          assert.strictEqual(pages, 3)
          assert.strictEqual(ids.length, matching)
          assert.strictEqual(new Set(ids).size, matching)
          const bad = yield* w.app.request("POST", `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/INBOX/search`, { key: w.org.key, json: { q: "harbour", page_token: "not a token" } })
          assert.strictEqual(bad.status, 400, bad.text)
        }))

      it.effect("SEARCH in a label mailbox finds only that mailbox's messages, in the database; ESEARCH RETURN (MIN MAX COUNT ALL) answers them (imaplib)", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const ids: Array<string> = []
          for (const subject of ["Ferry one", "Ferry two", "Ferry three", "Ferry four"]) {
            const delivered = yield* w.deliver({ subject, text: "the ferry timetable" })
            ids.push((delivered.body.delivered[0] as { message_id: string }).message_id)
          }
          for (const id of [ids[1]!, ids[3]!]) {
            const labelled = yield* w.app.request("PATCH", `/v0/inboxes/${w.inbox.inbox_id}/messages/${id}`, { key: w.org.key, json: { add_labels: ["trips"] } })
            assert.strictEqual(labelled.status, 200, labelled.text)
          }
          const out = yield* python(`
import imaplib, sys
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
m.login(sys.argv[2], sys.argv[3])
print("ESEARCH" in m.capabilities)
m.select("trips")
print(m.uid("SEARCH", "TEXT", "ferry")[1][0].decode())
m.uid("SEARCH", "RETURN", "(MIN MAX COUNT ALL)", "TEXT", "ferry")
print(m.untagged_responses.pop("ESEARCH")[0].decode())
m.search(None, "RETURN", "(COUNT)", "TEXT", "nowhere")
print(m.untagged_responses.pop("ESEARCH")[0].decode())
m.select("INBOX")
m.search(None, "RETURN", "()", "TEXT", "ferry")
print(m.untagged_responses.pop("ESEARCH")[0].decode())
`, [String(w.port), w.inbox.email, w.key])
          assert.strictEqual(out.code, 0, out.stderr)
          const [capable, plain, labelled, none, inbox] = out.stdout.trim().split("\n")
          assert.strictEqual(capable, "True")
          assert.strictEqual(plain, "1 2")
          assert.match(labelled!, /^\(TAG "[^"]+"\) UID MIN 1 MAX 2 COUNT 2 ALL 1:2$/)
          assert.match(none!, /^\(TAG "[^"]+"\) COUNT 0$/)
          assert.match(inbox!, /^\(TAG "[^"]+"\) ALL 1:4$/)
          // The operation itself reads the label mailbox's messages alone, not the inbox's matches.
          const res = yield* w.app.request("POST", `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/trips/search`, { key: w.org.key, json: { q: "ferry" } })
          assert.strictEqual(res.status, 200, res.text)
          assert.deepStrictEqual([...res.body.message_ids].sort(), [ids[1], ids[3]].sort())
        }))

      it.effect("mailboxes.sync with an earlier answer's fingerprint is unchanged until a message arrives, is relabelled, gets a keyword or is deleted; the inbox can still be deleted", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const delivered = yield* w.deliver({ subject: "First", text: "one" })
          const id = (delivered.body.delivered[0] as { message_id: string }).message_id
          const sync = (known?: string) =>
            Effect.map(w.app.request("POST", `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/INBOX/sync`, { key: w.org.key, json: known === undefined ? {} : { known } }), (r) => {
              assert.strictEqual(r.status, 200, r.text)
              return r.body as { fingerprint: string; unchanged: boolean; messages: Array<{ uid: number; flags: Array<string> }> }
            })
          let state = yield* sync()
          assert.strictEqual(state.messages.length, 1)
          assert.isTrue((yield* sync(state.fingerprint)).unchanged)
          const changed = (what: string) =>
            Effect.gen(function*() {
              const next = yield* sync(state.fingerprint)
              assert.isFalse(next.unchanged, what)
              state = next
              assert.isTrue((yield* sync(state.fingerprint)).unchanged, `${what}, asked again`)
              return next
            })
          yield* w.deliver({ subject: "Second", text: "two" })
          assert.strictEqual((yield* changed("a message arrives")).messages.length, 2)
          yield* w.app.request("PATCH", `/v0/inboxes/${w.inbox.inbox_id}/messages/${id}`, { key: w.org.key, json: { add_labels: ["starred"] } })
          assert.include((yield* changed("a label that is a flag")).messages[0]!.flags, "\\Flagged")
          const flagged = yield* w.app.request("POST", `/v0/inboxes/${w.inbox.inbox_id}/mailboxes/INBOX/flags`, { key: w.org.key, json: { uids: [state.messages[0]!.uid], add: ["$Important"] } })
          assert.strictEqual(flagged.status, 200, flagged.text)
          assert.include((yield* changed("a keyword")).messages[0]!.flags, "$Important")
          const deleted = yield* w.app.request("DELETE", `/v0/inboxes/${w.inbox.inbox_id}/messages/${id}`, { key: w.org.key })
          assert.isBelow(deleted.status, 300, deleted.text)
          assert.strictEqual((yield* changed("a message deleted")).messages.length, 1)
          // The counter goes with its inbox: deleting the inbox deletes its messages and the counter at once.
          const gone = yield* w.app.request("DELETE", `/v0/inboxes/${w.inbox.inbox_id}`, { key: w.org.key })
          assert.isBelow(gone.status, 300, gone.text)
        }))

      it.effect("SEARCH TEXT in Trash finds the trashed messages, which INBOX's SEARCH leaves out", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "Ferry kept", text: "the ferry leaves at nine" })
          yield* w.deliver({ subject: "Ferry binned", text: "the ferry was late" })
          const c = yield* client(w.port, w.inbox.email, w.key)
          const lock = yield* Effect.promise(() => c.getMailboxLock("INBOX"))
          const uidOf = yield* Effect.promise(async () => {
            const found = new Map<string, number>()
            for await (const m of c.fetch("1:*", { uid: true, envelope: true })) found.set(m.envelope?.subject ?? "", m.uid)
            return found
          })
          yield* Effect.promise(() => c.messageDelete(String(uidOf.get("Ferry binned")), { uid: true }))
          assert.deepStrictEqual(yield* Effect.promise(() => c.search({ text: "ferry" }, { uid: true })), [uidOf.get("Ferry kept")!])
          lock.release()
          const trashLock = yield* Effect.promise(() => c.getMailboxLock("Trash"))
          const inTrash = yield* Effect.promise(async () => {
            const out = []
            for await (const m of c.fetch("1:*", { uid: true, envelope: true })) out.push(m)
            return out
          })
          assert.deepStrictEqual(inTrash.map((m) => m.envelope?.subject), ["Ferry binned"])
          assert.deepStrictEqual(yield* Effect.promise(() => c.search({ text: "ferry" }, { uid: true })), [inTrash[0]!.uid])
          trashLock.release()
        }))

      it.effect("COPY and MOVE change labels with COPYUID; \\Deleted and EXPUNGE move to trash; UIDs are never reused", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "Keep", text: "k" })
          yield* w.deliver({ subject: "Bin", text: "b" })
          const c = yield* client(w.port, w.inbox.email, w.key)
          yield* Effect.promise(() => c.mailboxCreate("Receipts"))
          const lock = yield* Effect.promise(() => c.getMailboxLock("INBOX"))
          // Both arrive at one instant of the test's clock: find each by its subject.
          const uidOf = yield* Effect.promise(async () => {
            const found = new Map<string, number>()
            for await (const m of c.fetch("1:*", { uid: true, envelope: true })) found.set(m.envelope?.subject ?? "", m.uid)
            return found
          })
          const copied = yield* Effect.promise(() => c.messageCopy(String(uidOf.get("Keep")), "Receipts", { uid: true }))
          assert.isTrue(copied !== false && copied.uidMap !== undefined && copied.uidMap.size === 1)
          const labelled = yield* w.messages("?labels=receipts")
          assert.deepStrictEqual(labelled.map((m) => m.subject), ["Keep"])
          yield* Effect.promise(() => c.messageFlagsAdd(String(uidOf.get("Bin")), ["\\Deleted"], { uid: true }))
          yield* Effect.promise(() => c.messageDelete(String(uidOf.get("Bin")), { uid: true }))
          const trash = yield* w.messages("?labels=trash")
          assert.deepStrictEqual(trash.map((m) => m.subject), ["Bin"])
          const status = (yield* Effect.promise(() => c.status("INBOX", { messages: true, uidNext: true }))) as { messages?: number; uidNext?: number }
          assert.strictEqual(status.messages, 1)
          lock.release()
          // Back from Trash to INBOX: a new UID, above every one given before.
          const trashLock = yield* Effect.promise(() => c.getMailboxLock("Trash"))
          const moved = yield* Effect.promise(() => c.messageMove("1:*", "INBOX"))
          assert.isTrue(moved !== false)
          trashLock.release()
          const inboxLock = yield* Effect.promise(() => c.getMailboxLock("INBOX"))
          const uids = (yield* Effect.promise(() => c.search({ all: true }, { uid: true }))) as Array<number>
          assert.strictEqual(uids.length, 2)
          assert.isAtLeast(Math.max(...uids), status.uidNext!)
          inboxLock.release()
        }))

      it.effect("APPEND to a label stores the user's copy with APPENDUID; to Sent, a copy of a sent message adds nothing; to Drafts, a draft the API sees", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const c = yield* client(w.port, w.inbox.email, w.key)
          yield* Effect.promise(() => c.mailboxCreate("Notes"))
          const raw = `From: ${w.inbox.email}\r\nTo: a@example.net\r\nSubject: A note\r\nMessage-ID: <note-1@client.example>\r\n\r\nremember\r\n`
          const appended = yield* Effect.promise(() => c.append("Notes", raw, ["\\Seen"]))
          assert.isTrue(appended !== false && (appended.uid ?? 0) > 0)
          const notes = yield* w.messages("?labels=notes")
          assert.deepStrictEqual(notes.map((m) => m.subject), ["A note"])
          const sent = yield* w.app.request("POST", `/v0/inboxes/${w.inbox.inbox_id}/messages/send`, { key: w.org.key, json: { to: "b@example.net", subject: "Sent once", text: "hi" } })
          const full = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/messages/${sent.body.message_id}`, { key: w.org.key })).body
          const copy = (yield* w.raw(sent.body.message_id as string))
          yield* Effect.promise(() => c.append("Sent", copy, ["\\Seen"]))
          const inSent = yield* w.messages("?labels=sent")
          assert.strictEqual(inSent.length, 1, `the client's copy of ${full.rfc_message_id} adds nothing`)
          yield* Effect.promise(() => c.append("Drafts", `From: ${w.inbox.email}\r\nTo: c@example.net\r\nSubject: Draft from a client\r\n\r\nlater\r\n`, ["\\Draft"]))
          const drafts = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/drafts`, { key: w.org.key })).body
          assert.deepStrictEqual(drafts.drafts.map((d: { subject?: string }) => d.subject), ["Draft from a client"])
        }))

      it.effect("APPEND to Drafts keeps the client's attachments: the API's draft lists each with its name, type and size, and answers its bytes", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const c = yield* client(w.port, w.inbox.email, w.key)
          const bytes = Buffer.from(Array.from({ length: 150 }, (_, i) => `row ${String(i).padStart(3, "0")} of the file\n`).join(""))
          const raw = [
            `From: ${w.inbox.email}`, "To: c@example.net", "Subject: Draft with a file", "MIME-Version: 1.0",
            `Content-Type: multipart/mixed; boundary="b1"`, "", "--b1", "Content-Type: text/plain; charset=utf-8", "", "see the file", "--b1",
            `Content-Type: text/csv; name="data.csv"`, `Content-Disposition: attachment; filename="data.csv"`, "Content-Transfer-Encoding: base64", "",
            ...(bytes.toString("base64").match(/.{1,76}/g) ?? []), "--b1--", ""
          ].join("\r\n")
          yield* Effect.promise(() => c.append("Drafts", raw, ["\\Draft"]))
          const list = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/drafts`, { key: w.org.key })).body
          const draft = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/drafts/${list.drafts[0].draft_id}`, { key: w.org.key })).body
          assert.strictEqual(draft.text.trim(), "see the file")
          const files = draft.attachments as Array<{ attachment_id: string; filename?: string; content_type?: string; size?: number }>
          assert.deepStrictEqual(files.map((a) => [a.filename, a.content_type, a.size]), [["data.csv", "text/csv", bytes.length]])
          const meta = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/drafts/${draft.draft_id}/attachments/${files[0]!.attachment_id}`, { key: w.org.key })).body
          const url = new URL(meta.download_url as string)
          assert.strictEqual((yield* w.app.request("GET", `${url.pathname}${url.search}`)).text, bytes.toString())
        }))

      it.effect("IDLE: a message delivered through the API reaches an idling client as EXISTS within a second", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const c = yield* client(w.port, w.inbox.email, w.key)
          const lock = yield* Effect.promise(() => c.getMailboxLock("INBOX"))
          const told = new Promise<number>((resolve) => c.on("exists", (data: { count: number }) => resolve(data.count)))
          void c.idle()
          // Real time: the test's clock is virtual, the client's and the server's are not.
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 300)))
          const started = Date.now()
          yield* w.deliver({ subject: "Wake up", text: "new" })
          const count = yield* Effect.promise(() => Promise.race([told, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 5_000))]))
          assert.strictEqual(count, 1)
          assert.isBelow(Date.now() - started, 1_000)
          lock.release()
        }))

      it.effect("IDLE: a hundred sessions idling in one mailbox each get EXISTS within a second of one delivery", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          for (let i = 0; i < 20; i++) yield* w.deliver({ subject: `Before ${i}`, text: "old" })
          const sessions = yield* Effect.acquireRelease(
            Effect.promise(async () => {
              const all: Array<IdleSession> = []
              // Five sign-ins at a time, as a mail client opens its connections.
              for (let i = 0; i < 100; i += 5) all.push(...await Promise.all(Array.from({ length: 5 }, () => idleSession(w.port, w.inbox.email, w.key))))
              return all
            }),
            (all) => Effect.sync(() => all.forEach((s) => s.socket.destroy()))
          )
          assert.deepStrictEqual(new Set(sessions.map((s) => s.exists)), new Set([20]))
          const told = sessions.map((s) => s.nextExists())
          const started = Date.now()
          yield* w.deliver({ subject: "Wake up, all", text: "new" })
          const counts = yield* Effect.promise(() => Promise.race([Promise.all(told), new Promise<Array<number>>((resolve) => setTimeout(() => resolve([]), 10_000))]))
          assert.deepStrictEqual(counts, sessions.map(() => 21))
          assert.isBelow(Date.now() - started, 1_000)
        }))

      it.effect("a label with non-ASCII letters is listed in modified UTF-7 to imaplib, and selected by that name", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const delivered = yield* w.deliver({ subject: "Facture", text: "due" })
          const id = (delivered.body.delivered[0] as { message_id: string }).message_id
          const labelled = yield* w.app.request("PATCH", `/v0/inboxes/${w.inbox.inbox_id}/messages/${id}`, { key: w.org.key, json: { add_labels: ["reçus"] } })
          assert.strictEqual(labelled.status, 200, labelled.text)
          const out = yield* python(`
import imaplib, sys
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
m.login(sys.argv[2], sys.argv[3])
for l in m.list()[1]:
    if b"re&" in l: print(l.decode())
typ, data = m.select('"re&AOc-us"')
print(typ, data[0].decode())
`, [String(w.port), w.inbox.email, w.key])
          assert.strictEqual(out.code, 0, out.stderr)
          assert.include(out.stdout, '(\\HasNoChildren) "/" "re&AOc-us"')
          assert.include(out.stdout, "OK 1")
        }))

      it.effect("a key revoked after sign-in: the session's next command is answered BYE and the connection ends", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const created = (yield* w.app.request("POST", "/v0/api-keys", { key: w.org.key, json: { name: "to revoke", inbox_id: w.inbox.inbox_id } })).body as { api_key: string; api_key_id: string }
          const out = yield* Effect.promise(async () => {
            const socket = connect({ host: "127.0.0.1", port: w.port })
            let text = ""
            const ended = new Promise<void>((resolve) => socket.on("close", () => resolve()))
            const until = async (needle: string) => {
              for (let i = 0; i < 100 && !text.includes(needle); i++) await new Promise((r) => setTimeout(r, 50))
            }
            socket.on("data", (d: Buffer) => void (text += d.toString("latin1")))
            await until("\r\n")
            socket.write(`a LOGIN "${w.inbox.email}" "${created.api_key}"\r\n`)
            await until("a OK")
            return { socket, ended, until, text: () => text }
          })
          assert.include(out.text(), "a OK")
          assert.strictEqual((yield* w.app.request("DELETE", `/v0/api-keys/${created.api_key_id}`, { key: w.org.key })).status, 204)
          out.socket.write("b SELECT INBOX\r\n")
          const closed = yield* Effect.promise(() => Promise.race([out.ended.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5_000))]))
          assert.isTrue(closed)
          assert.match(out.text(), /\* BYE \[UNAVAILABLE\] The API key was revoked/)
          assert.notInclude(out.text(), "b OK")
        }))

      it.effect("IDLE: a keyword another session stores reaches an idling client as FETCH FLAGS within a second", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver({ subject: "Tag me", text: "body" })
          const idler = yield* client(w.port, w.inbox.email, w.key)
          const other = yield* client(w.port, w.inbox.email, w.key)
          const lock = yield* Effect.promise(() => idler.getMailboxLock("INBOX"))
          const told = new Promise<ReadonlyArray<string>>((resolve) => idler.on("flags", (data: { flags: Set<string> }) => resolve([...data.flags])))
          void idler.idle()
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 300)))
          const started = Date.now()
          yield* Effect.promise(async () => {
            const otherLock = await other.getMailboxLock("INBOX")
            await other.messageFlagsAdd("1", ["$Important"], { uid: true })
            otherLock.release()
          })
          const flags = yield* Effect.promise(() => Promise.race([told, new Promise<ReadonlyArray<string>>((resolve) => setTimeout(() => resolve([]), 5_000))]))
          assert.include(flags, "$Important")
          assert.isBelow(Date.now() - started, 1_000)
          lock.release()
        }))
    }
  )
}

// Credentials over plain text are refused unless the operator allowed loopback; STARTTLS and implicit TLS take them.
for (const storage of storages()) {
  const starttls = ImapServer.layer({ host: "127.0.0.1", port: 0, tls: certificate })
  layer(starttls.pipe(Layer.provideMerge(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))))), { timeout: "120 seconds" })(
    `IMAP over TLS (${storage.name})`,
    (it) => {
      it.effect("LOGIN over plain text is NO [PRIVACYREQUIRED] with LOGINDISABLED announced; after STARTTLS it signs in", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const out = yield* python(`
import imaplib, ssl, sys
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
print("LOGINDISABLED" in m.capabilities, "STARTTLS" in m.capabilities)
try:
    m.login(sys.argv[2], sys.argv[3])
    print("accepted")
except imaplib.IMAP4.error as e:
    print(str(e))
m = imaplib.IMAP4("127.0.0.1", int(sys.argv[1]))
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
m.starttls(ssl_context=ctx)
print(m.login(sys.argv[2], sys.argv[3])[0])
print(m.select("INBOX")[0])
`, [String(w.port), w.inbox.email, w.key])
          assert.strictEqual(out.code, 0, out.stderr)
          const lines = out.stdout.trim().split("\n")
          assert.strictEqual(lines[0], "True True")
          assert.include(lines[1], "[PRIVACYREQUIRED]")
          assert.deepStrictEqual(lines.slice(2), ["OK", "OK"])
        }))
    }
  )
}
