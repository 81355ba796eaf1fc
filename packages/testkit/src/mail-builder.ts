/**
 * Small RFC 822 messages for tests, built with nodemailer's MailComposer so they look like
 * what real clients send (headers folded, bodies encoded, multiparts with boundaries).
 */
import MailComposer from "nodemailer/lib/mail-composer/index.js"

export interface TestMail {
  readonly from?: string
  readonly to?: string | ReadonlyArray<string>
  readonly cc?: string | ReadonlyArray<string>
  readonly subject?: string
  readonly text?: string
  readonly html?: string
  readonly messageId?: string
  readonly inReplyTo?: string
  readonly references?: ReadonlyArray<string>
  readonly date?: Date
  readonly headers?: Readonly<Record<string, string>>
  readonly attachments?: ReadonlyArray<{ readonly filename: string; readonly content: string | Uint8Array; readonly contentType?: string }>
}

const list = (v: string | ReadonlyArray<string> | undefined) => (v === undefined ? undefined : typeof v === "string" ? v : v.join(", "))

export const buildMail = async (mail: TestMail = {}): Promise<Uint8Array> => {
  const composer = new MailComposer({
    from: mail.from ?? "Ann Sender <ann@example.org>",
    ...(list(mail.to) === undefined ? { to: "someone@inbox.localhost" } : { to: list(mail.to) as string }),
    ...(list(mail.cc) === undefined ? {} : { cc: list(mail.cc) as string }),
    subject: mail.subject ?? "Hello",
    ...(mail.text === undefined && mail.html === undefined ? { text: "Hi there." } : {}),
    ...(mail.text === undefined ? {} : { text: mail.text }),
    ...(mail.html === undefined ? {} : { html: mail.html }),
    ...(mail.messageId === undefined ? {} : { messageId: mail.messageId }),
    ...(mail.inReplyTo === undefined ? {} : { inReplyTo: mail.inReplyTo }),
    ...(mail.references === undefined ? {} : { references: [...mail.references] }),
    date: mail.date ?? new Date("2026-01-02T03:04:05Z"),
    ...(mail.headers === undefined ? {} : { headers: { ...mail.headers } }),
    ...(mail.attachments === undefined
      ? {}
      : {
        attachments: mail.attachments.map((a) => ({
          filename: a.filename,
          content: typeof a.content === "string" ? a.content : Buffer.from(a.content),
          ...(a.contentType === undefined ? {} : { contentType: a.contentType })
        }))
      })
  })
  const built = await composer.compile().build()
  return new Uint8Array(built.buffer, built.byteOffset, built.byteLength)
}
