/**
 * The built-in SMTP receiver, tested through real SMTP conversations (nodemailer on
 * loopback) with SPF, DKIM and DMARC answered by a real DNS server on loopback: plain and
 * STARTTLS delivery, refused recipients (never a relay), the size limit, a message signed by
 * a domain whose key DNS publishes (passes), a tampered one (unauthenticated); and the
 * per-IP limits (open connections, message rate) with the idle timeout and the lifetime
 * that free a slot; and a storage failure answered 451, so the sender retries.
 */
import { assert, it, layer } from "@effect/vitest"
import { Engine, Inbound, Settings } from "@inbox/core/internal"
import { SmtpReceiver } from "@inbox/mailserver"
import { engineWithDns, LoopbackDns, newOrganization, selfSignedCertificate, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { generateKeyPairSync } from "node:crypto"
import { connect } from "node:net"
import nodemailer from "nodemailer"

const MAX_BYTES = 64 * 1024

const certificate = selfSignedCertificate("mx.inbox.localhost")

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body as { inbox_id: string; email: string }
  const port = (yield* SmtpReceiver).port
  const list = (query = "") => Effect.map(
    app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages${query}`, { key: org.key }),
    (r) => r.body.messages as Array<{ message_id: string; subject?: string; labels: Array<string> }>
  )
  const full = (id: string) => Effect.map(app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${id}`, { key: org.key }), (r) => r.body)
  return { app, org, inbox, port, messages: list(), list, full }
})

const transport = (port: number, tls: "none" | "starttls" = "none") =>
  nodemailer.createTransport({
    host: "127.0.0.1",
    port,
    secure: false,
    ...(tls === "none" ? { ignoreTLS: true } : { requireTLS: true, tls: { rejectUnauthorized: false } })
  })

type Transport = ReturnType<typeof transport>
const send = (t: Transport, mail: Parameters<Transport["sendMail"]>[0]) =>
  Effect.promise(() => t.sendMail(mail).then((info) => ({ ok: true as const, info }), (error: { responseCode?: number; response?: string }) => ({ ok: false as const, error })))

/** A sending domain with its DKIM key, SPF and DMARC published on the loopback DNS server. */
const sendingDomain = (name: string, spf: string) =>
  Effect.gen(function*() {
    const zone = yield* LoopbackDns
    const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
    const p = publicKey.export({ type: "spki", format: "der" }).toString("base64")
    zone.set(`sel._domainkey.${name}`, "TXT", [`v=DKIM1; k=rsa; p=${p}`])
    zone.set(name, "TXT", [spf])
    zone.set(`_dmarc.${name}`, "TXT", ["v=DMARC1; p=reject"])
    return { domainName: name, keySelector: "sel", privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }
  })

for (const storage of storages()) {
  const engine = TestApp.layer.pipe(Layer.provideMerge(engineWithDns(storage.layer)))
  const receiver = SmtpReceiver.layer({ host: "127.0.0.1", port: 0, tls: certificate, maxBytes: MAX_BYTES })
  layer(receiver.pipe(Layer.provideMerge(engine)), { timeout: "120 seconds" })(`SMTP receiver (${storage.name})`, (it) => {
    it.effect("plain SMTP: a message to a hosted inbox gets 250 after it is stored, with an Authentication-Results header", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const sent = yield* send(transport(w.port), { from: "ann@plain.example", to: w.inbox.email, subject: "Plain", text: "Hello" })
        assert.isTrue(sent.ok, JSON.stringify(sent))
        if (sent.ok) assert.match(sent.info.response, /^250 /)
        const [message] = yield* w.messages
        assert.strictEqual(message?.subject, "Plain")
        assert.includeMembers(message?.labels ?? [], ["received", "unread"])
        assert.notInclude(message?.labels ?? [], "unauthenticated")
        const full = yield* w.full(message?.message_id ?? "")
        assert.match(full.headers["authentication-results"] ?? "", /spf=/)
      }))

    it.effect("an incoming Authentication-Results header bearing our authserv-id is renamed X-Original-Authentication-Results before ours is added; another server's is kept", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const ours = (yield* Settings).mailHost
        const forged = `${ours.toUpperCase()} 1; dkim=pass header.d=bank.example; spf=pass; dmarc=pass`
        const raw = `Authentication-Results: ${forged}\r\nAuthentication-Results: mx.elsewhere.example; spf=fail\r\n` +
          `From: ann@forged.example\r\nTo: ${w.inbox.email}\r\nSubject: Trust me\r\nMessage-ID: <forged-ar@forged.example>\r\n\r\nHello\r\n`
        const sent = yield* send(transport(w.port), { envelope: { from: "ann@forged.example", to: [w.inbox.email] }, raw })
        assert.isTrue(sent.ok, JSON.stringify(sent))
        const [message] = yield* w.messages
        const full = yield* w.full(message?.message_id ?? "")
        const results: ReadonlyArray<string> = full.headers["authentication-results"].split("\n")
        assert.deepStrictEqual(results.map((r) => r.split(";")[0]), [ours, "mx.elsewhere.example"], "ours first, the other server's kept")
        assert.notInclude(results[0], "dkim=pass")
        assert.strictEqual(full.headers["x-original-authentication-results"], forged)
        const rawText = (yield* w.app.request("GET", `/v0/inboxes/${w.inbox.inbox_id}/messages/${message?.message_id}/raw/download`, { key: w.org.key })).text
        assert.include(rawText, `\r\nX-Original-Authentication-Results: ${forged}\r\n`)
        assert.isTrue(rawText.endsWith(`Message-ID: <forged-ar@forged.example>\r\n\r\nHello\r\n`), "the rest as it came")
      }))

    it.effect("STARTTLS: the receiver offers it and takes mail over the encrypted session", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const sent = yield* send(transport(w.port, "starttls"), { from: "ann@tls.example", to: w.inbox.email, subject: "Secret", text: "Hi" })
        assert.isTrue(sent.ok, JSON.stringify(sent))
        assert.strictEqual((yield* w.messages)[0]?.subject, "Secret")
      }))

    it.effect("a recipient not hosted here is refused with 550 5.1.1: the server never relays", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        for (const to of ["someone@gmail.com", `nobody@inbox.localhost`, "postmaster@elsewhere.example"]) {
          const refused = yield* send(transport(w.port), { from: "spammer@relay.example", to, subject: "Relay?", text: "x" })
          assert.isFalse(refused.ok, to)
          if (!refused.ok) {
            assert.strictEqual(refused.error.responseCode, 550, to)
            assert.include(refused.error.response ?? "", "5.1.1")
          }
        }
        const mixed = yield* send(transport(w.port), { from: "ann@mixed.example", to: [w.inbox.email, "other@gmail.com"], subject: "Mixed", text: "x" })
        assert.isTrue(mixed.ok, JSON.stringify(mixed))
        if (mixed.ok) {
          assert.deepStrictEqual(mixed.info.accepted, [w.inbox.email])
          assert.deepStrictEqual(mixed.info.rejected, ["other@gmail.com"])
        }
      }))

    it.effect("EHLO advertises SIZE with the mail engine's limit", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const { socket } = yield* greeting(w.port)
        const reply = yield* Effect.callback<string>((resume) => {
          let text = ""
          const onData = (d: Buffer) => {
            text += d.toString("utf8")
            if (!/^250 /m.test(text)) return
            socket.off("data", onData)
            resume(Effect.succeed(text))
          }
          socket.on("data", onData)
          socket.write("EHLO client.example\r\n")
        })
        assert.match(reply, new RegExp(`^250[- ]SIZE ${MAX_BYTES}\r?$`, "m"))
      }).pipe(Effect.scoped))

    it.effect("an oversized message is refused with 552 and nothing is stored", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const refused = yield* send(transport(w.port), { from: "ann@big.example", to: w.inbox.email, subject: "Big", text: "x".repeat(MAX_BYTES + 1024) })
        assert.isFalse(refused.ok)
        if (!refused.ok) assert.strictEqual(refused.error.responseCode, 552, JSON.stringify(refused.error))
        assert.lengthOf(yield* w.messages, 0)
      }))

    it.effect("a message signed by a domain whose key DNS publishes passes DKIM, SPF and DMARC: not labelled unauthenticated", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const name = `signer-${Date.now().toString(36)}.example`
        const dkim = yield* sendingDomain(name, "v=spf1 ip4:127.0.0.1 -all")
        const t = nodemailer.createTransport({ host: "127.0.0.1", port: w.port, secure: false, ignoreTLS: true, dkim })
        const sent = yield* send(t, { from: `ann@${name}`, to: w.inbox.email, subject: "Signed", text: "Genuine" })
        assert.isTrue(sent.ok, JSON.stringify(sent))
        const [message] = yield* w.messages
        assert.notInclude(message?.labels ?? [], "unauthenticated")
        const full = yield* w.full(message?.message_id ?? "")
        const results = full.headers["authentication-results"] ?? ""
        assert.match(results, /dkim=pass/)
        assert.match(results, /spf=pass/)
        assert.match(results, /dmarc=pass/)
      }))

    it.effect("a tampered signed message fails DKIM and DMARC and is labelled unauthenticated", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const name = `tampered-${Date.now().toString(36)}.example`
        const dkim = yield* sendingDomain(name, "v=spf1 ip4:192.0.2.1 -all")
        // Sign a message, then change its body after signing, as a forger would.
        const signer = nodemailer.createTransport({ streamTransport: true, buffer: true, dkim })
        const signed = yield* Effect.promise(() => signer.sendMail({ from: `ann@${name}`, to: w.inbox.email, subject: "Pay", text: "Pay 10 EUR" }))
        const tampered = (signed.message as Buffer).toString("utf8").replace("Pay 10 EUR", "Pay 9999 EUR")
        const sent = yield* send(transport(w.port), { envelope: { from: `ann@${name}`, to: [w.inbox.email] }, raw: tampered })
        assert.isTrue(sent.ok, JSON.stringify(sent))
        // Unauthenticated mail is hidden from plain listings: asked for by its label.
        assert.lengthOf(yield* w.messages, 0)
        const [message] = yield* w.list("?labels=unauthenticated")
        assert.include(message?.labels ?? [], "unauthenticated")
        const full = yield* w.full(message?.message_id ?? "")
        assert.match(full.headers["authentication-results"] ?? "", /dmarc=fail/)
      }))

    it.effect("an inbox deleted between RCPT and the end of DATA: the message is refused 550 5.1.1 (no such mailbox) and nothing is stored; so is the retry, at RCPT", () =>
      Effect.gen(function*() {
        const w = yield* setUp
        const { ask } = yield* conversation(w.port)
        assert.match(yield* ask("EHLO client.example"), /^250[ -]/)
        assert.match(yield* ask("MAIL FROM:<ann@gone.example>"), /^250 /)
        assert.match(yield* ask(`RCPT TO:<${w.inbox.email}>`), /^250 /)
        // The RCPT's answer named this inbox; it is gone before the message is in.
        assert.strictEqual((yield* w.app.request("DELETE", `/v0/inboxes/${w.inbox.inbox_id}`, { key: w.org.key })).status, 204)
        assert.match(yield* ask("DATA"), /^354 /)
        const reply = yield* ask(`From: ann@gone.example\r\nTo: ${w.inbox.email}\r\nSubject: Too late\r\nMessage-ID: <too-late@gone.example>\r\n\r\nHello\r\n.`)
        assert.match(reply, /^550 5\.1\.1 /)
        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE rfc_message_id = '<too-late@gone.example>'`
        assert.strictEqual(stored[0]?.n, 0)
        assert.match(yield* ask("RSET"), /^250 /)
        assert.match(yield* ask("MAIL FROM:<ann@gone.example>"), /^250 /)
        assert.match(yield* ask(`RCPT TO:<${w.inbox.email}>`), /^550 5\.1\.1 /)
      }).pipe(Effect.scoped))
  })
}

/** Waits until the server has closed the socket (a few seconds at most). */
const waitClosed = (socket: ReturnType<typeof connect>) =>
  Effect.callback<void>((resume) => {
    if (socket.readableEnded || socket.destroyed) return resume(Effect.void)
    const timer = setTimeout(() => resume(Effect.die(new Error("the server did not close the connection"))), 5_000)
    socket.once("close", () => {
      clearTimeout(timer)
      resume(Effect.void)
    })
    socket.resume()
  })

/** The server's first reply line on a new connection. */
const greeting = (port: number) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly line: string; readonly socket: ReturnType<typeof connect> }>((resume) => {
      const socket = connect(port, "127.0.0.1")
      socket.once("data", (data) => resume(Effect.succeed({ line: data.toString("utf8"), socket })))
    }),
    ({ socket }) => Effect.sync(() => socket.destroy())
  )

/**
 * A raw SMTP conversation, for steps a client library will not take apart: `ask` sends one
 * command (or a message's lines and its final dot) and answers the server's whole reply.
 */
const conversation = (port: number) =>
  Effect.gen(function*() {
    const { socket } = yield* greeting(port)
    let buffered = ""
    let waiting: ((reply: string) => void) | undefined
    socket.on("data", (data: Buffer) => {
      buffered += data.toString("utf8")
      // A reply is complete at a line whose code is followed by a space, not a dash.
      if (waiting !== undefined && /(^|\r\n)\d{3} [^\r\n]*\r\n$/.test(buffered)) {
        const reply = buffered
        buffered = ""
        const resume = waiting
        waiting = undefined
        resume(reply)
      }
    })
    const ask = (line: string) =>
      Effect.callback<string>((resume) => {
        waiting = (reply) => resume(Effect.succeed(reply))
        socket.write(`${line}\r\n`)
      })
    return { ask }
  })

/** The engine on PGlite, for the receivers whose rules do not depend on storage. */
const onPglite = TestApp.layer.pipe(Layer.provideMerge(engineWithDns(storages()[0]?.layer ?? (undefined as never))))

layer(
  SmtpReceiver.layer({ host: "127.0.0.1", port: 0, maxConnectionsPerIp: 2, messagesPerMinutePerIp: 2 }).pipe(
    Layer.provideMerge(onPglite)
  ),
  { timeout: "120 seconds" }
)("SMTP receiver limits", (it) => {
  it.effect("a client IP over its open-connection limit is answered 421, however often it tries", () =>
    Effect.gen(function*() {
      const port = (yield* SmtpReceiver).port
      assert.match((yield* greeting(port)).line, /^220 /)
      assert.match((yield* greeting(port)).line, /^220 /)
      // A refused connection must not count as one that closed: the two above are still open.
      for (let i = 0; i < 3; i++) {
        const refused = yield* greeting(port)
        assert.match(refused.line, /^421 /)
        yield* waitClosed(refused.socket)
      }
    }).pipe(Effect.scoped))

  it.effect("a client IP over its message rate is answered 451 at MAIL FROM, and may retry later", () =>
    Effect.gen(function*() {
      const w = yield* setUp
      const t = transport(w.port)
      const outcomes = []
      for (let i = 0; i < 3; i++) outcomes.push(yield* send(t, { from: "ann@rate.example", to: w.inbox.email, subject: `n${i}`, text: "x" }))
      assert.deepStrictEqual(outcomes.map((o) => o.ok), [true, true, false])
      const last = outcomes[2]
      if (last !== undefined && !last.ok) assert.strictEqual(last.error.responseCode, 451)
      t.close()
    }))
})

// Short timeouts, in a layer of their own: the other limits' tests hold connections open.
layer(
  SmtpReceiver.layer({ host: "127.0.0.1", port: 0, maxConnectionsPerIp: 2, socketTimeoutMs: 1_000, maxSessionMs: 2_500 }).pipe(
    Layer.provideMerge(onPglite)
  ),
  { timeout: "120 seconds" }
)("SMTP receiver timeouts", (it) => {
  it.effect("a silent client is disconnected after the socket timeout, and its slot is free again", () =>
    Effect.gen(function*() {
      const port = (yield* SmtpReceiver).port
      const silent = [yield* greeting(port), yield* greeting(port)]
      assert.match((yield* greeting(port)).line, /^421 /)
      for (const s of silent) yield* waitClosed(s.socket)
      assert.match((yield* greeting(port)).line, /^220 /)
    }).pipe(Effect.scoped))

  it.effect("a slow client that is never silent is closed at the session's lifetime with 421, and its slot is free again", () =>
    Effect.gen(function*() {
      const port = (yield* SmtpReceiver).port
      const chatty = [yield* greeting(port), yield* greeting(port)]
      const lines: Array<string> = []
      for (const c of chatty) c.socket.on("data", (d: Buffer) => lines.push(d.toString("utf8")))
      // A NOOP every 300 ms: well within the 1 s idle timeout, for longer than the 2.5 s lifetime.
      const noops = setInterval(() => {
        for (const c of chatty) if (!c.socket.destroyed) c.socket.write("NOOP\r\n")
      }, 300)
      try {
        assert.match((yield* greeting(port)).line, /^421 /)
        for (const c of chatty) yield* waitClosed(c.socket)
      } finally {
        clearInterval(noops)
      }
      assert.isTrue(lines.some((l) => /^421 4\.4\.2 /m.test(l)), lines.join(""))
      assert.match((yield* greeting(port)).line, /^220 /)
    }).pipe(Effect.scoped))
})

// A store that fails: the receiver in front of an engine whose every delivery dies (the
// database gone, say), the rest of the engine real.
const failing = Layer.effect(Engine, Effect.map(Engine, (real) => Engine.of({
  ...real,
  call: ((name, input, caller, context) =>
    name === "inbound.receive" ? Effect.die(new Error("the database is unreachable")) : real.call(name, input, caller, context)) as typeof real.call
})))

layer(
  SmtpReceiver.layer({ host: "127.0.0.1", port: 0 }).pipe(
    Layer.provide(failing),
    Layer.provideMerge(onPglite)
  ),
  { timeout: "120 seconds" }
)("SMTP receiver, storage failing", (it) => {
  it.effect("a storage failure is answered 451 4.3.0, so the sender keeps the message and retries; nothing is stored", () =>
    Effect.gen(function*() {
      const w = yield* setUp
      const outcome = yield* send(transport(w.port), { from: "ann@fail.example", to: w.inbox.email, subject: "kept by the sender", text: "x" })
      assert.isFalse(outcome.ok)
      if (!outcome.ok) {
        assert.strictEqual(outcome.error.responseCode, 451)
        assert.match(outcome.error.response ?? "", /4\.3\.0/)
      }
      assert.lengthOf(yield* w.messages, 0)
    }))
})
