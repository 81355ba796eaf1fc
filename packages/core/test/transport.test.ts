/**
 * MailTransport implementations against the one contract, and the agent verification code
 * travelling through a real SMTP conversation when a relay is configured.
 */
import { assert, it, layer } from "@effect/vitest"
import { Agents, Egress, Engine, Ids, MailTransport, readLocalOutbox } from "@inbox/core/internal"
import { CapturedMail, layerMemory, mailTransportContract, settingsLayer, SmtpSink, storages } from "@inbox/testkit"
import { Effect, Layer } from "effect"

mailTransportContract({
  name: "captured outbox",
  layer: CapturedMail.layer,
  delivered: CapturedMail.use((c) => Effect.map(c.all, (all) => all.map((m) => ({ from: m.envelope.from, to: m.envelope.to, raw: m.raw })))),
  refuse: (address) => CapturedMail.use((c) => c.reject(address))
})

for (const storage of storages()) {
  mailTransportContract({
    name: `local outbox (${storage.name})`,
    layer: MailTransport.layerLocalOutbox.pipe(Layer.provideMerge(storage.layer)),
    delivered: Effect.map(readLocalOutbox(1000), (rows) => [...rows].reverse().map((r) => ({ from: r.envelope_from, to: r.envelope_to, raw: r.raw })))
  })
}

const refusing = ["nobody@example.org"]
mailTransportContract({
  name: "SMTP relay (nodemailer to smtp-server on loopback)",
  layer: Layer.unwrap(SmtpSink.useSync((sink) => MailTransport.layerSmtp(sink.url))).pipe(
    Layer.provideMerge(SmtpSink.layer({ reject: refusing }))
  ),
  delivered: SmtpSink.useSync((sink) => sink.received().map((r) => ({ from: r.from, to: r.to, raw: r.raw }))),
  refuse: (address) => Effect.sync(() => assert.include(refusing, address))
})

const relayOf = (url: (sink: string) => string) =>
  Layer.unwrap(SmtpSink.useSync((sink) => MailTransport.layerSmtp(url(sink.url)))).pipe(Layer.provideMerge(SmtpSink.layer()))

const sendThree = Effect.gen(function*() {
  const transport = yield* MailTransport
  for (let i = 0; i < 3; i++) {
    yield* transport.send({ envelope: { from: "a@relay.example", to: ["b@relay.example"] }, raw: new TextEncoder().encode(`Subject: ${i}\r\n\r\nhi\r\n`) })
  }
  const sink = yield* SmtpSink
  return { delivered: sink.received().length, connections: sink.connections() }
})

layer(relayOf((url) => url), { timeout: "60 seconds" })("SMTP relay connections", (it) => {
  it.effect("messages relayed one after another share one pooled connection", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* sendThree, { delivered: 3, connections: 1 })
    }))
})

layer(relayOf((url) => `${url}?pool=false`), { timeout: "60 seconds" })("SMTP relay without pooling", (it) => {
  it.effect("a relay URL with pool=false opens a connection per message", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* sendThree, { delivered: 3, connections: 3 })
    }))
})

const [firstStorage] = storages()
if (firstStorage !== undefined) {
  const relayEngine = Layer.unwrap(SmtpSink.useSync((sink) =>
    Engine.layer.pipe(
      Layer.provideMerge(MailTransport.layerSmtp(sink.url)),
      Layer.provideMerge(Layer.mergeAll(Ids.layer, settingsLayer(), Egress.layerTest({}), layerMemory)),
      Layer.provideMerge(firstStorage.layer)
    )
  )).pipe(Layer.provideMerge(SmtpSink.layer()))

  layer(relayEngine, { timeout: "120 seconds" })("agent code over the SMTP relay", (it) => {
    it.effect("sign-up mails the human's 6-digit code through the relay", () =>
      Effect.gen(function*() {
        const result = yield* (yield* Agents).signUp({ username: "relay-agent", human_email: "human@relay.example" }, "127.0.0.1")
        assert.match(result.api_key, /^am_/)
        const mail = (yield* SmtpSink).received().find((m) => m.to.includes("human@relay.example"))
        assert.isDefined(mail)
        assert.match(mail?.raw.toString("utf8") ?? "", /Your verification code is \d{6}\./)
      }))
  })
}
