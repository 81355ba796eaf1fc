/**
 * An inbox's settings for a mail app (IMAP to read, SMTP to send): the user name and each
 * server's host, port and security, from `GET /v0/inboxes/{inbox_id}/client-settings`; empty
 * lists say the server runs no such server.
 */
import { render } from "preact"
import { type Answer, client } from "./client.ts"
import { h, notice, page } from "./dom.js"

type ClientSettings = Answer<"inboxes.clientSettings">
type Server = ClientSettings["imap"][number]

const SECURITY: Readonly<Record<Server["security"], string>> = { starttls: "STARTTLS", tls: "SSL/TLS" }

const Copy = ({ value, what }: { readonly value: string; readonly what: string }) => (
  <button type="button" aria-label={`Copy the ${what}`} onClick={() => void navigator.clipboard.writeText(value).then(() => notice("Copied."))}>Copy</button>
)

const Servers = ({ name, servers }: { readonly name: string; readonly servers: ReadonlyArray<Server> }) => servers.length === 0
  ? <p class="muted">{name}: not configured on this server.</p>
  : (
    <table aria-label={`${name} servers`}>
      <thead><tr><th>Host</th><th>Port</th><th>Security</th></tr></thead>
      <tbody>{servers.map((s) => (
        <tr key={`${s.host}:${s.port}`}><td><code>{s.host}</code> <Copy value={s.host} what={`${name} host`} /></td><td>{s.port}</td><td>{SECURITY[s.security] ?? s.security}</td></tr>
      ))}</tbody>
    </table>
  )

const View = ({ settings: shown }: { readonly settings: ClientSettings }) => (
    <>
      <dl class="envelope">
        <dt>User name</dt><dd><code>{shown.username}</code> <Copy value={shown.username} what="user name" /></dd>
      </dl>
      <h2>IMAP (reading)</h2>
      <Servers name="IMAP" servers={shown.imap} />
      <h2>SMTP (sending)</h2>
      <Servers name="SMTP" servers={shown.smtp} />
    </>
)

export const clientSettings = async (inboxId: string) => {
  const answer = await client.GET("/v0/inboxes/{inbox_id}/client-settings", { params: { path: { inbox_id: inboxId } } })
  const back = h("p", {}, h("a", { href: `#/inbox/${encodeURIComponent(inboxId)}` }, "← Back to the inbox"))
  const settings = answer.data
  if (settings === undefined) {
    const body = (answer.error ?? {}) as { message?: string }
    page("Mail app settings", back, h("p", { className: "muted" }, body.message ?? "The settings could not be read."))
    return
  }
  const container = h("div", {})
  page(`Mail app settings · ${settings.username}`, back, container)
  render(<View settings={settings} />, container)
}
