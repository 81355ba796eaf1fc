/**
 * The mailbox operations of the catalogue: an inbox as IMAP shows it (Mailboxes.ts), and
 * the sign-in of IMAP and SMTP submission. The IMAP server calls these and nothing else
 * decides; they are REST routes too, so any program can read an inbox the way a mail client does.
 */
import { Effect, Schema } from "effect"
import { ApiKeys } from "../apikeys/ApiKeys.ts"
import { Auth } from "../auth/Auth.ts"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { InvalidCredentials } from "../errors/errors.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { MAX_QUERY_LENGTH } from "../search/query.ts"
import { searchPermissions } from "../search/Search.ts"
import { Settings } from "../settings/Settings.ts"
import { Line } from "../shared/fields.ts"
import { IntegerParam } from "../shared/pagination.ts"
import { AppendResult, CopyResult, FlagsResult, MailboxInfo, Mailboxes, MailboxState, SEARCH_PAGE, SearchMatches } from "./Mailboxes.ts"

const BASE = "/v0/inboxes/:inbox_id/mailboxes"
const Uids = Schema.Array(Schema.Int.check(Schema.isGreaterThan(0))).check(Schema.isMaxLength(100_000))
const Flag = Line(128)
const NO_TOOL = { exclude: "a mail client's view of an inbox: the message and label tools do the same for agents" } as const
const NO_COMMAND = { exclude: "a mail client's view of an inbox: `inboxctl messages` and labels do the same" } as const

export const listMailboxes = operation({
  name: "mailboxes.list",
  summary: "The inbox's IMAP mailboxes: INBOX, Sent, Drafts, Trash, Junk and one per user label.",
  routes: [route.get(BASE)],
  access: { kind: "member", permission: "message_read" },
  output: Output.json(Schema.Struct({ mailboxes: Schema.Array(MailboxInfo) })),
  mutates: false,
  mcp: NO_TOOL,
  cli: NO_COMMAND,
  run: ({ principal, params }) => Effect.map(Mailboxes.use((m) => m.list(principal, params.inbox_id)), (mailboxes) => ({ mailboxes }))
})

export const createMailbox = operation({
  name: "mailboxes.create",
  summary: "Create a mailbox: a user label (lower case), listed while it holds no message.",
  routes: [route.post(BASE)],
  access: { kind: "member", permission: "message_update" },
  body: Schema.Struct({ name: Line(256) }),
  output: Output.json(MailboxInfo),
  mutates: true,
  mcp: NO_TOOL,
  cli: NO_COMMAND,
  run: ({ principal, params, input }) => Mailboxes.use((m) => m.create(principal, params.inbox_id, input.name))
})

export const syncMailbox = operation({
  name: "mailboxes.sync",
  summary: "A mailbox's UIDVALIDITY, UIDNEXT and messages with their UIDs and flags; messages new to it get their UIDs now. With `known` (an earlier answer's fingerprint), the messages only if something changed; with `changes_only` too, only the messages changed since and every UID (`uids`).",
  routes: [route.post(`${BASE}/:mailbox/sync`)],
  access: { kind: "member", permission: "message_read" },
  body: Schema.Struct({ known: Schema.optionalKey(Line(256)), changes_only: Schema.optionalKey(Schema.Boolean) }),
  output: Output.json(MailboxState),
  mutates: false,
  mcp: NO_TOOL,
  cli: NO_COMMAND,
  run: ({ principal, params, input }) => Mailboxes.use((m) => m.sync(principal, params.inbox_id, params.mailbox, input.known, input.changes_only))
})

export const flagMessages = operation({
  name: "mailboxes.flags",
  summary: "Add and remove IMAP flags on messages of a mailbox by UID (\\Seen: not unread, \\Flagged: starred); with `unchanged_since`, only on those whose modseq is not above it (CONDSTORE), the others answered in `modified`; answers the mailbox's state.",
  routes: [route.post(`${BASE}/:mailbox/flags`)],
  access: { kind: "member", permission: "message_update" },
  body: Schema.Struct({
    uids: Uids,
    add: Schema.optionalKey(Schema.Array(Flag)),
    remove: Schema.optionalKey(Schema.Array(Flag)),
    unchanged_since: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
  }),
  output: Output.json(FlagsResult),
  mutates: true,
  mcp: NO_TOOL,
  cli: NO_COMMAND,
  run: ({ principal, params, input }) => Mailboxes.use((m) => m.flags(principal, params.inbox_id, params.mailbox, input.uids, input.add ?? [], input.remove ?? [], input.unchanged_since))
})

export const copyMessages = operation({
  name: "mailboxes.copy",
  summary: "Copy (or with move, move) messages of a mailbox by UID to another: their labels change; answers the new UIDs.",
  routes: [route.post(`${BASE}/:mailbox/copy`)],
  access: { kind: "member", permission: "message_update" },
  body: Schema.Struct({ uids: Uids, to: Line(256), move: Schema.optionalKey(Schema.Boolean) }),
  output: Output.json(CopyResult),
  mutates: true,
  mcp: NO_TOOL,
  cli: NO_COMMAND,
  run: ({ principal, params, input }) => Mailboxes.use((m) => m.copy(principal, params.inbox_id, params.mailbox, input.uids, input.to, input.move === true))
})

export const expungeMessages = operation({
  name: "mailboxes.expunge",
  summary: "Move the mailbox's messages flagged \\Deleted (of `uids`, when given) to trash, or delete them from Trash; answers their UIDs.",
  routes: [route.post(`${BASE}/:mailbox/expunge`)],
  access: { kind: "member", permission: "message_delete" },
  body: Schema.Struct({ uids: Schema.optionalKey(Uids) }),
  output: Output.json(Schema.Struct({ uids: Schema.Array(Schema.Number) })),
  mutates: true,
  mcp: NO_TOOL,
  cli: NO_COMMAND,
  run: ({ principal, params, input }) =>
    Effect.map(Mailboxes.use((m) => m.expunge(principal, params.inbox_id, params.mailbox, input.uids)), (uids) => ({ uids }))
})

export const appendMessage = operation({
  name: "mailboxes.append",
  summary: "Store raw RFC 822 bytes in a mailbox as the user's own copy (no lists, spam rules or message.received); to Drafts, a draft. `flags` comma-separated.",
  routes: [route.post(`${BASE}/:mailbox/append`)],
  access: { kind: "member", permission: "message_update" },
  query: Schema.Struct({ flags: Schema.optionalKey(Schema.String) }),
  raw: { maxBytes: 50 * 1024 * 1024 },
  output: Output.json(AppendResult),
  mutates: true,
  mcp: NO_TOOL,
  cli: NO_COMMAND,
  run: ({ principal, params, input, raw }) =>
    Mailboxes.use((m) =>
      m.append(principal, params.inbox_id, params.mailbox, raw, (input.flags ?? "").split(",").map((f) => f.trim()).filter((f) => f !== ""))
    )
})

export const searchMailbox = operation({
  name: "mailboxes.search",
  summary: "Every message of a mailbox that a search query matches (q as in search_messages), unranked, by id, in pages of `limit` ids (at most and by default 100,000), of the messages that have a UID in the mailbox: " +
    "what IMAP SEARCH answers, where messages.search ranks only the newest 500 matches.",
  routes: [route.post(`${BASE}/:mailbox/search`)],
  access: { kind: "member", permission: "message_read" },
  body: Schema.Struct({
    q: Line(MAX_QUERY_LENGTH),
    limit: Schema.optionalKey(IntegerParam(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: SEARCH_PAGE })))),
    page_token: Schema.optionalKey(Line(1024))
  }),
  permissionsFor: (input) => searchPermissions(input.q),
  output: Output.json(SearchMatches),
  mutates: false,
  mcp: NO_TOOL,
  cli: NO_COMMAND,
  run: ({ principal, params, input }) => Mailboxes.use((m) => m.search(principal, params.inbox_id, params.mailbox, input.q, input))
})

const SignedIn = Schema.Struct({ inbox_id: Schema.String, email: Schema.String, organization_id: Schema.String, pod_id: Schema.String })

/**
 * IMAP and SMTP submission sign-in: the user name is the inbox's address (or its id), the
 * password an API key whose scope covers that inbox (its permissions are checked by each command). Wrong
 * answers count like the dashboard's passwords (per account and client IP; 429 beyond);
 * every refusal is the same 401, so a key of inbox A learns nothing of inbox B.
 */
export const mailSignIn = operation({
  name: "mailboxes.signIn",
  summary: "A mail client's sign-in (IMAP, SMTP submission): inbox address and API key.",
  routes: [],
  access: { kind: "local" },
  body: Schema.Struct({ username: Line(320), password: Line(512), client_ip: Line(64) }),
  output: Output.json(SignedIn),
  mutates: false,
  mcp: { exclude: "a mail server's own question" },
  cli: { exclude: "a mail server's own question" },
  run: ({ input }) =>
    Effect.gen(function*() {
      const refused = new InvalidCredentials({ message: "Wrong user name or API key.", fix: "Sign in with the inbox's address and an API key scoped to it." })
      const tries = (yield* Auth).attempts(`mail:${input.username.toLowerCase()}`, input.client_ip)
      yield* tries.count
      const principal = yield* ApiKeys.use((k) => k.authenticate(input.password)).pipe(Effect.mapError(() => refused))
      const inbox = yield* Mailboxes.use((m) => m.inbox(principal, input.username)).pipe(Effect.mapError(() => refused))
      yield* tries.succeeded
      return { inbox_id: inbox.id, email: inbox.email, organization_id: inbox.organization_id, pod_id: inbox.pod_id }
    })
})

const ClientServer = Schema.Struct({ host: Schema.String, port: Schema.Number, security: Schema.Literals(["starttls", "tls"]) })
const ClientSettings = Schema.Struct({
  inbox_id: Schema.String,
  /** The user name a mail client signs in with: the inbox's address (the password is an API key). */
  username: Schema.String,
  imap: Schema.Array(ClientServer),
  smtp: Schema.Array(ClientServer)
})

/**
 * What a person types into a mail client for this inbox, as the dashboard shows it: the host
 * of INBOX_MAIL_HOST, the ports of the IMAP and submission servers that are configured
 * (implicit TLS first), and the inbox's address as the user name. Lists are empty when a
 * server is off.
 */
export const clientSettings = operation({
  name: "inboxes.clientSettings",
  summary: "The IMAP and SMTP settings a mail client needs for this inbox: host, port and TLS of each server, and the user name (the password is an API key scoped to the inbox).",
  routes: [route.get("/v0/inboxes/:inbox_id/client-settings")],
  access: { kind: "member", permission: "inbox_read" },
  output: Output.json(ClientSettings),
  mutates: false,
  mcp: { exclude: "settings for a person's mail client; agents read mail through the message tools" },
  cli: { command: "inboxes client-settings" },
  run: ({ principal, params }) =>
    Effect.gen(function*() {
      const inbox = yield* Inboxes.use((i) => i.find(principal, params.inbox_id))
      const settings = yield* Settings
      const servers = (list: ReadonlyArray<{ readonly port: number; readonly security: "starttls" | "tls" }>) =>
        list.map((s) => ({ host: settings.mailHost, port: s.port, security: s.security }))
      return { inbox_id: inbox.id, username: inbox.email, imap: servers(settings.mailClientServers.imap), smtp: servers(settings.mailClientServers.smtp) }
    })
})

export const mailboxOperations = [listMailboxes, createMailbox, syncMailbox, flagMessages, copyMessages, expungeMessages, appendMessage, searchMailbox, mailSignIn, clientSettings]
