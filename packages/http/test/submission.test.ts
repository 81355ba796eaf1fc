/**
 * SMTP submission (docs/mail-servers.md, "IMAP and SMTP submission"), through real SMTP
 * conversations: nodemailer and Python's smtplib (the system's python3) over STARTTLS and
 * plain loopback. Sign-in with the inbox's address and a key scoped to it; a key of another
 * inbox refused; a foreign MAIL FROM or From header refused with 5xx; the message kept as
 * written (its Message-ID), in Sent for the API, relayed once with `message.sent`; Bcc
 * recipients receive it and the Bcc header never leaves.
 */
import { assert, it, layer } from "@effect/vitest"
import { SubmissionServer } from "@inbox/mailserver"
import { CapturedMail, engineLayer, mailClientWorld, selfSignedCertificate, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import nodemailer from "nodemailer"

const certificate = selfSignedCertificate("mx.inbox.localhost")

/** An organization with two inboxes and a key scoped to the first. */
const setUp = Effect.gen(function*() {
  const world = yield* mailClientWorld
  return { ...world, port: (yield* SubmissionServer).port }
})

const transport = (port: number, user: string, pass: string, tls: "none" | "starttls" = "starttls") =>
  nodemailer.createTransport({
    host: "127.0.0.1",
    port,
    secure: false,
    auth: { user, pass },
    ...(tls === "none" ? { ignoreTLS: true } : { requireTLS: true, tls: { rejectUnauthorized: false } })
  })

const send = (t: ReturnType<typeof transport>, mail: Parameters<ReturnType<typeof transport>["sendMail"]>[0]) =>
  Effect.promise(() => t.sendMail(mail).then((info) => ({ ok: true as const, info }), (error: { responseCode?: number; response?: string }) => ({ ok: false as const, error })))

const relayed = CapturedMail.use((c) => c.all)

for (const storage of storages()) {
  const server = SubmissionServer.layer({ host: "127.0.0.1", port: 0, tls: certificate, allowPlainLoopback: true })
  layer(server.pipe(Layer.provideMerge(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))))), { timeout: "120 seconds" })(
    `SMTP submission (${storage.name})`,
    (it) => {
      it.effect("AUTH with the inbox's address and a key scoped to it sends over STARTTLS: kept as written, in Sent, relayed once, message.sent", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const before = (yield* relayed).length
          const sent = yield* send(transport(w.port, w.inbox.email, w.key), {
            from: w.inbox.email,
            to: "friend@example.net",
            subject: "Through submission",
            text: "Hello from an SMTP library",
            messageId: "<kept-as-written@client.example>"
          })
          assert.isTrue(sent.ok, JSON.stringify(sent))
          const out = (yield* relayed).slice(before)
          assert.strictEqual(out.length, 1)
          assert.deepStrictEqual(out[0]!.envelope.to, ["friend@example.net"])
          assert.include(Buffer.from(out[0]!.raw).toString("utf8"), "Message-ID: <kept-as-written@client.example>")
          const list = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/messages?labels=sent`, { key: w.org.key })).body
          assert.strictEqual(list.messages.length, 1)
          assert.strictEqual(list.messages[0].subject, "Through submission")
          const events = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/events`, { key: w.org.key })).body
          assert.isTrue(events.events.some((e: { event_type: string; send?: { message_id: string } }) => e.event_type === "message.sent" && e.send?.message_id === list.messages[0].message_id), JSON.stringify(events))
        }))

      it.effect("Bcc recipients receive the message and the Bcc header is in nothing that leaves, nor in the stored copy", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const before = (yield* relayed).length
          const sent = yield* send(transport(w.port, w.inbox.email, w.key), {
            from: w.inbox.email,
            to: "to@example.net",
            bcc: ["hidden@example.org"],
            subject: "With a blind copy",
            text: "Nobody sees the Bcc"
          })
          assert.isTrue(sent.ok, JSON.stringify(sent))
          const out = (yield* relayed).slice(before)
          assert.strictEqual(out.length, 1)
          assert.sameMembers([...out[0]!.envelope.to], ["to@example.net", "hidden@example.org"])
          assert.notMatch(Buffer.from(out[0]!.raw).toString("utf8"), /^bcc:/im)
          const list = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/messages?labels=sent`, { key: w.org.key })).body
          const raw = yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/messages/${list.messages[0].message_id}/raw/download`, { key: w.org.key })
          assert.notMatch(raw.text, /^bcc:/im)
        }))

      it.effect("a key scoped to another inbox, or a wrong key, is refused 535; MAIL FROM or From of another address is 5xx", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const wrongInbox = yield* send(transport(w.port, w.other.email, w.key), { from: w.other.email, to: "x@example.net", text: "no" })
          assert.isFalse(wrongInbox.ok)
          assert.strictEqual(!wrongInbox.ok && wrongInbox.error.responseCode, 535)
          const wrongKey = yield* send(transport(w.port, w.inbox.email, "am_wrong"), { from: w.inbox.email, to: "x@example.net", text: "no" })
          assert.strictEqual(!wrongKey.ok && wrongKey.error.responseCode, 535)
          const foreignEnvelope = yield* send(transport(w.port, w.inbox.email, w.key), {
            envelope: { from: "boss@example.com", to: ["x@example.net"] },
            from: w.inbox.email,
            to: "x@example.net",
            text: "spoof"
          })
          assert.strictEqual(!foreignEnvelope.ok && foreignEnvelope.error.responseCode, 553)
          const foreignHeader = yield* send(transport(w.port, w.inbox.email, w.key), {
            envelope: { from: w.inbox.email, to: ["x@example.net"] },
            from: "boss@example.com",
            to: "x@example.net",
            text: "spoof"
          })
          assert.isFalse(foreignHeader.ok)
          assert.isAtLeast(!foreignHeader.ok ? foreignHeader.error.responseCode ?? 0 : 0, 500)
        }))

      it.effect("send-raw: an envelope sender (mail_from) other than the inbox's address is 400 validation_error on mail_from; the inbox's own is sent", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const raw = (subject: string) => new TextEncoder().encode(`From: ${w.inbox.email}\r\nTo: friend@example.net\r\nSubject: ${subject}\r\n\r\nhello\r\n`)
          const path = (from: string) => `/v0/inboxes/${w.inbox.inbox_id}/messages/send-raw?to=friend@example.net&mail_from=${encodeURIComponent(from)}`
          const foreign = yield* w.app.request("POST", path("boss@example.com"), { key: w.key, body: raw("spoof"), headers: { "content-type": "message/rfc822" } })
          assert.strictEqual(foreign.status, 400, foreign.text)
          assert.strictEqual(foreign.body.code, "validation_error")
          assert.deepStrictEqual(foreign.body.errors[0].path, ["mail_from"])
          const own = yield* w.app.request("POST", path(w.inbox.email), { key: w.key, body: raw("own"), headers: { "content-type": "message/rfc822" } })
          assert.strictEqual(own.status, 200, own.text)
        }))

      it.effect("a key revoked after AUTH: the next message on the same connection is refused 535", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const created = (yield* w.app.request("POST", "/v0/api-keys", { key: w.org.key, json: { name: "to revoke", inbox_id: w.inbox.inbox_id } })).body as { api_key: string; api_key_id: string }
          // One connection for both messages: the second is sent after the revocation, without a new AUTH.
          const pooled = nodemailer.createTransport({
            host: "127.0.0.1",
            port: w.port,
            secure: false,
            pool: true,
            maxConnections: 1,
            auth: { user: w.inbox.email, pass: created.api_key },
            requireTLS: true,
            tls: { rejectUnauthorized: false }
          })
          const first = yield* send(pooled, { from: w.inbox.email, to: "friend@example.net", subject: "before", text: "before" })
          assert.isTrue(first.ok)
          assert.strictEqual((yield* w.app.request("DELETE", `/v0/api-keys/${created.api_key_id}`, { key: w.org.key })).status, 204)
          const second = yield* send(pooled, { from: w.inbox.email, to: "friend@example.net", subject: "after", text: "after" })
          pooled.close()
          assert.isFalse(second.ok)
          assert.strictEqual(!second.ok && second.error.responseCode, 535)
          const sent = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/messages?labels=sent`, { key: w.org.key })).body.messages as Array<{ subject: string }>
          assert.deepStrictEqual(sent.map((m) => m.subject), ["before"])
        }))

      it.effect("a MAIL FROM of another address is refused 553 at MAIL FROM, before DATA (smtplib); the inbox's own is accepted there", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const before = (yield* relayed).length
          // Each command by hand, so the reply of MAIL FROM itself is seen, and DATA never sent.
          const script = `
import smtplib, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
with smtplib.SMTP("127.0.0.1", int(sys.argv[1])) as s:
    s.starttls(context=ctx)
    s.ehlo()
    s.login(sys.argv[2], sys.argv[3])
    print(s.mail("boss@example.com")[0])
    s.rset()
    print(s.mail(sys.argv[2])[0])
`
          const result = yield* Effect.promise(() =>
            new Promise<{ stdout: string; stderr: string }>((resolve) =>
              execFile("python3", ["-c", script, String(w.port), w.inbox.email, w.key], { timeout: 30_000 }, (_error, stdout, stderr) => resolve({ stdout, stderr })))
          )
          assert.deepStrictEqual(result.stdout.trim().split("\n"), ["553", "250"], result.stderr)
          assert.strictEqual((yield* relayed).length, before)
        }))

      it.effect("Python's smtplib sends with AUTH PLAIN after STARTTLS; the message lands in Sent", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const script = `
import smtplib, ssl, sys
from email.message import EmailMessage
m = EmailMessage()
m["From"] = sys.argv[2]
m["To"] = "py@example.net"
m["Subject"] = "From smtplib"
m.set_content("sent by python")
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
with smtplib.SMTP("127.0.0.1", int(sys.argv[1])) as s:
    s.starttls(context=ctx)
    s.login(sys.argv[2], sys.argv[3])
    s.send_message(m)
print("ok")
`
          // Asynchronous: the server answers on this process's event loop.
          const result = yield* Effect.promise(() =>
            new Promise<{ code: number; stderr: string }>((resolve) =>
              execFile("python3", ["-c", script, String(w.port), w.inbox.email, w.key], { timeout: 30_000 }, (error, _stdout, stderr) =>
                resolve({ code: error === null ? 0 : 1, stderr })))
          )
          assert.strictEqual(result.code, 0, result.stderr)
          const list = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/messages?labels=sent`, { key: w.org.key })).body
          assert.deepStrictEqual(list.messages.map((m: { subject: string }) => m.subject), ["From smtplib"])
        }))
    }
  )
}
