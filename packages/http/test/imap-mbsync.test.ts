/**
 * The IMAP server against a real mail client from Debian in batch mode: mbsync (package
 * isync) syncs an inbox's INBOX to a Maildir and back, on PGlite and PostgreSQL: the
 * message it fetches is the API's raw message, a message it uploads (APPEND) is stored,
 * and a message it marks read loses `unread`. Needs /usr/bin/mbsync (testkit's requirements.ts).
 */
import { assert, layer } from "@effect/vitest"
import { ImapServer } from "@inbox/mailserver"
import { deliverMail, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body as { inbox_id: string; email: string }
  const scoped = (yield* app.request("POST", "/v0/api-keys", { key: org.key, json: { name: "mbsync", inbox_id: inbox.inbox_id } })).body as { api_key: string }
  const port = (yield* ImapServer).port
  const messages = () =>
    Effect.map(app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages`, { key: org.key }), (r) => r.body.messages as Array<{ message_id: string; subject: string; labels: Array<string> }>)
  const raw = (id: string) => Effect.map(app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${id}/raw/download`, { key: org.key }), (r) => r.text)
  return { inbox, key: scoped.api_key, port, deliver: (subject: string) => deliverMail(inbox.email, { subject, text: "synced" }), messages, raw }
})

for (const storage of storages()) {
  const server = ImapServer.layer({ host: "127.0.0.1", port: 0, allowPlainLoopback: true })
  layer(server.pipe(Layer.provideMerge(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))))), { timeout: "120 seconds" })(
    `IMAP with mbsync (${storage.name})`,
    (it) => {
      it.effect("mbsync (Debian's isync) syncs INBOX to a Maildir (the same bytes, LF line ends) and back: a message it uploads is stored, a flag it sets becomes a label", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          yield* w.deliver("For mbsync")
          const dir = mkdtempSync(join(tmpdir(), "mbsync-"))
          const config = join(dir, "mbsyncrc")
          mkdirSync(join(dir, "mail"))
          writeFileSync(config, [
            "IMAPAccount inbox",
            "Host 127.0.0.1",
            `Port ${w.port}`,
            `User ${w.inbox.email}`,
            `Pass ${w.key}`,
            "SSLType None",
            "AuthMechs LOGIN",
            "",
            "IMAPStore remote",
            "Account inbox",
            "",
            "MaildirStore local",
            `Path ${dir}/mail/`,
            `Inbox ${dir}/mail/INBOX`,
            "",
            "Channel inbox",
            "Far :remote:",
            "Near :local:",
            "Patterns INBOX",
            "Create Near",
            "Sync All",
            "SyncState *",
            ""
          ].join("\n"))
          const mbsync = () =>
            Effect.promise(() =>
              new Promise<{ code: number; out: string }>((resolve) =>
                execFile("mbsync", ["-c", config, "-a"], { timeout: 60_000 }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : 1, out: stdout + stderr })))
            )
          const first = yield* mbsync()
          assert.strictEqual(first.code, 0, first.out)
          const files = () => ["new", "cur"].flatMap((sub) => readdirSync(join(dir, "mail/INBOX", sub)).map((f) => join(dir, "mail/INBOX", sub, f)))
          assert.strictEqual(files().length, 1)
          const [stored] = yield* w.messages()
          // A Maildir keeps LF line ends, and mbsync adds its own X-TUID header to the local copy.
          const local = readFileSync(files()[0]!, "utf8").replace(/^X-TUID: .*\n/m, "").replace(/\n/g, "\r\n")
          assert.strictEqual(local, yield* w.raw(stored!.message_id))
          // Read in the Maildir (flag S), and a message of the user's own put there.
          const file = files()[0]!
          renameSync(file, join(dir, "mail/INBOX/cur", `${file.split("/").pop()!.split(":")[0]}:2,S`))
          writeFileSync(join(dir, "mail/INBOX/new", "1700000000.1_1.local"), `From: someone@example.net\r\nTo: ${w.inbox.email}\r\nSubject: Uploaded by mbsync\r\nMessage-ID: <up-1@local>\r\n\r\nhello\r\n`)
          const second = yield* mbsync()
          assert.strictEqual(second.code, 0, second.out)
          const after = yield* w.messages()
          assert.sameMembers(after.map((m) => m.subject), ["For mbsync", "Uploaded by mbsync"])
          assert.notInclude(after.find((m) => m.subject === "For mbsync")!.labels, "unread")
        }))
    }
  )
}
