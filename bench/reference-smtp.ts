/**
 * The bare SMTP reference of `pnpm bench smtp` (bench/smtp.ts): `smtp-server` answering
 * RCPT for any address, checking each message with `mailauth` (SPF, DKIM, DMARC, ARC)
 * against the same loopback DNS server with a 60 s cache as ours has, parsing it with bare
 * `simpleParser`, and storing nothing. It answers `250` once both are done, so it measures
 * what a receiver must do before it may store anything.
 *
 *   REF_SMTP_PORT=... REF_DNS_SERVER=host:port node --import tsx bench/reference-smtp.ts
 */
import { Resolver } from "node:dns/promises"
import { authenticate } from "mailauth"
import { simpleParser } from "mailparser"
import { SMTPServer } from "smtp-server"

const resolver = new Resolver({ timeout: 2000, tries: 1 })
resolver.setServers([process.env["REF_DNS_SERVER"] ?? "127.0.0.1:53"])
const cache = new Map<string, { readonly at: number; readonly answer: Promise<unknown> }>()
const resolve = (name: string, type: string) => {
  const key = `${type} ${name}`
  const hit = cache.get(key)
  if (hit !== undefined && Date.now() - hit.at < 60_000) return hit.answer
  const answer = resolver.resolve(name, type)
  cache.set(key, { at: Date.now(), answer })
  return answer
}

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["AUTH", "STARTTLS"],
  logger: false,
  size: 50 * 1024 * 1024,
  onData(stream, session, callback) {
    const chunks: Array<Buffer> = []
    stream.on("data", (c: Buffer) => chunks.push(c))
    stream.on("end", () => {
      const raw = Buffer.concat(chunks)
      authenticate(raw, {
        ip: session.remoteAddress,
        helo: session.hostNameAppearsAs,
        sender: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
        mta: "mx.reference.localhost",
        resolver: resolve as never,
        disableBimi: true
      })
        .then(() => simpleParser(raw))
        .then(() => callback(), (e: Error) => callback(e))
    })
  }
})

server.listen(Number(process.env["REF_SMTP_PORT"] ?? "0"), "127.0.0.1", () => {
  console.log("REFERENCE_READY")
})
