/**
 * Which requests the server answers by the names they carry: the defence against DNS
 * rebinding, where a page on another site resolves its own name to this server's address
 * and has a victim's browser call it. Such a request names the other site in `Host`, so
 * a request is answered only when `Host` names the server: the host of INBOX_PUBLIC_URL,
 * the listen address, localhost and its loopback addresses, or INBOX_ALLOWED_HOSTS
 * (`*` there turns the check off, for a proxy in front that already checks). The port is
 * not compared: a name that reaches the server on another port is still the server.
 *
 * Routes without CORS (/mcp) also refuse a browser page on another origin: a request
 * whose `Origin` is neither the origin the request itself addresses nor the public URL's.
 * Clients that are not browsers send no Origin and pass.
 *
 * Adapters call these with the header values; the rules live here once.
 */
import { Effect } from "effect"
import { BadRequest, Forbidden } from "../errors/errors.ts"
import { Settings } from "../settings/Settings.ts"

// A host name or IPv4 address, or a bracketed IPv6 address, then an optional port. Nothing
// else: `evil.example@localhost` must not be read as localhost the way a URL parser would.
const HOST = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+))(?::(\d{1,5}))?$/i

/** The host name a Host header value names, lower case, without brackets or a trailing dot; undefined when malformed. */
export const hostNameOf = (host: string): string | undefined => {
  const match = HOST.exec(host.trim())
  if (match === null) return undefined
  const name = (match[1] ?? match[2] ?? "").toLowerCase().replace(/\.$/, "")
  return name === "" ? undefined : name
}

/** Succeeds when `host` (the Host header, or the authority of the request URL) names this server. */
export const checkHost = (host: string | undefined): Effect.Effect<void, BadRequest, Settings> =>
  Settings.use((settings) => {
    if (host === undefined || host.trim() === "") {
      return Effect.fail(new BadRequest({ message: "The request has no Host header.", fix: "Send the Host header (HTTP/1.1 requires it)." }))
    }
    if (settings.allowedHosts.includes("*")) return Effect.void
    const name = hostNameOf(host)
    if (name !== undefined && settings.allowedHosts.includes(name)) return Effect.void
    return Effect.fail(new BadRequest({
      message: `This server does not answer to the host ${JSON.stringify(host.slice(0, 100))}.`,
      fix: "Call the server by its own address; an operator adds other names with INBOX_ALLOWED_HOSTS."
    }))
  })

const originOf = (url: string): string | undefined => URL.parse(url)?.origin

/**
 * Succeeds when `origin` (the Origin header) is absent, the public URL's origin, or the
 * origin the request addresses: `host` with the scheme the request came by. The scheme
 * counts: on the public URL's host a request came by the public URL's scheme (a proxy in
 * front ends TLS), so with an `https` public URL an `http://` page of that host (one a
 * network attacker can write) is another origin. Other names reach the server's own
 * listener, plain HTTP, or a proxy's TLS in front of it, so either scheme is theirs. A page
 * on any other origin, or an opaque `null` origin, is refused with 403 forbidden.
 */
export const checkSameOrigin = (origin: string | undefined, host: string | undefined): Effect.Effect<void, Forbidden, Settings> =>
  Settings.use((settings) => {
    if (origin === undefined) return Effect.void
    const parsed = URL.parse(origin)
    const given = parsed?.origin
    const publicUrl = URL.parse(settings.publicUrl)
    if (parsed !== null && given !== undefined && given !== "null") {
      if (given === publicUrl?.origin) return Effect.void
      const name = host === undefined ? undefined : hostNameOf(host)
      if (host !== undefined && name !== undefined && given === originOf(`${parsed.protocol}//${host.trim()}`)) {
        const downgrade = parsed.protocol === "http:" && publicUrl?.protocol === "https:" && name === hostNameOf(publicUrl.host)
        if (!downgrade) return Effect.void
      }
    }
    return Effect.fail(new Forbidden({
      message: `Requests from pages on another origin (${origin.slice(0, 100)}) may not call this endpoint; it has no CORS.`,
      fix: "Call it from a server-side client, which sends no Origin header."
    }))
  })
