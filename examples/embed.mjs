// Embedding the engine in a Node application, with no HTTP server: an organization and an
// inbox, a message received, listed and answered. Plain JavaScript, the Promise API.
//   INBOX_DATA_DIR=./data node embed.mjs
import { createEngine, LOCAL } from "@inbox/core"

const engine = await createEngine({ dataDir: process.env.INBOX_DATA_DIR ?? "./inbox-data", baseDomain: "agents.example.com" })
try {
  // The operator (this application) creates an organization; its key is the app's caller from then on.
  const org = await engine.call("operator.createOrganization", { owner_email: "ops@example.com", verified: true }, LOCAL)
  const me = { kind: "key", key: org.api_key }
  const inbox = await engine.call("inboxes.create", { username: `support-${Date.now()}` }, me)

  // Mail arrives as the operator's mail forwarder files it.
  const mail = `From: Ann <ann@example.org>\r\nTo: ${inbox.email}\r\nSubject: Hello\r\nMessage-ID: <${Date.now()}@example.org>\r\n\r\nCan you help?\r\n`
  await engine.call("inbound.raw", { to: inbox.email, raw: new TextEncoder().encode(mail) }, LOCAL)

  const { messages } = await engine.call("messages.list", { inbox_id: inbox.inbox_id }, me)
  const reply = await engine.call("messages.reply", { inbox_id: inbox.inbox_id, message_id: messages[0].message_id, text: "Yes: here is how." }, me)

  // Refused exactly as the REST API refuses it.
  const refused = await engine.call("inboxes.create", { display_name: "x".repeat(500) }, me).catch((e) => e)

  console.log(JSON.stringify({ inbox: inbox.email, received: messages[0].subject, reply: reply.message_id.startsWith("msg_"), refused: refused.code }))
} finally {
  await engine.close()
}
