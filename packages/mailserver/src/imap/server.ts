/**
 * The IMAP server (RFC 9051 and RFC 3501 as clients speak them, with LITERAL+, UIDPLUS, MOVE,
 * IDLE, NAMESPACE, ID, ENABLE, UNSELECT, SPECIAL-USE, SASL-IR, ESEARCH, CONDSTORE): every inbox readable in
 * Thunderbird, Apple Mail or imaplib. It speaks the protocol and nothing more: the mailboxes,
 * UIDs, flags, copies and appends are core's `mailboxes.*` operations, the bytes are
 * `messages.rawDownload` (so BODY[] is byte-identical to the API's raw message), SEARCH's
 * words go to `mailboxes.search` (every match, unranked), and sign-in is `mailboxes.signIn`
 * (docs/mail-servers.md, "IMAP and SMTP submission").
 *
 * A session learns of changes made anywhere (the API, another session, another server
 * process on the same database) by syncing its mailbox: after each command that may see
 * them, and while it IDLEs when the engine signals that its inbox changed
 * (`Engine.messagesChanged`, which crosses processes on PostgreSQL), or every `idlePollMs`
 * (10 s) in case a signal was lost; the sync gives UIDs under a lock in the database, so
 * every process agrees on them. An idle session costs nothing until its inbox changes.
 *
 * Sessions of one key on one mailbox share their syncs: one in flight serves every session
 * that asks the same question (1,000 idling clients woken by one delivery make one sync),
 * and the last full answer is kept per key and mailbox, so a SELECT of a mailbox that has
 * not changed since costs a fingerprint check, and its sessions hold the same message
 * objects rather than copies each.
 */
import { type ApiError, Engine, type InputOf, LOCAL, type OperationName, type OutputOf, type Principal } from "@inbox/core"
import { Cause, Context, Effect, Exit, Layer, Stream } from "effect"
import { createServer as createNetServer, type Server, type Socket } from "node:net"
import { createSecureContext, createServer as createTlsServer, type SecureContext, TLSSocket } from "node:tls"
import { createHash } from "node:crypto"
import type { AddressInfo } from "node:net"
import { type Listen, mailAccessConfig, mayTakeCredentials, type TlsFiles } from "../access.ts"
import { bodyStructureOf, envelopeOf, parsePart, type Part, sectionOf, str } from "./mime.ts"
import { compactSet, decodeMailboxName, encodeMailboxName, frame, inSet, parseSet, SyntaxError, textOf, type Token, tokenize } from "./parser.ts"

export interface ImapOptions extends Listen {
  readonly implicitTls?: boolean
  readonly tls?: TlsFiles
  readonly allowPlainLoopback?: boolean
  /** How often an IDLE session looks for changes no signal told it of (default 10 s). */
  readonly idlePollMs?: number
}

interface MailboxMessage {
  readonly uid: number
  readonly message_id: string
  readonly flags: ReadonlyArray<string>
  readonly size: number
  readonly internal_date: string
  readonly modseq: number
}

interface MailboxState {
  readonly name: string
  readonly uidvalidity: number
  readonly uidnext: number
  readonly fingerprint: string
  readonly highest_modseq: number
  readonly unchanged: boolean
  readonly messages: ReadonlyArray<MailboxMessage>
  /** In an answer of the changes since a known state only: every UID of the mailbox. */
  readonly uids?: ReadonlyArray<number>
}

/** A refusal of core, carried to the command's NO. */
class Refused extends Error {
  constructor(readonly error: ApiError | undefined) {
    super(error?.message ?? "Temporary failure, try again later")
  }
}

const SYSTEM_FLAGS = ["\\Answered", "\\Flagged", "\\Deleted", "\\Seen", "\\Draft"]
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

const internalDate = (iso: string) => {
  const d = new Date(iso)
  const pad = (n: number) => String(n).padStart(2, "0")
  return `"${pad(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${d.getUTCFullYear()} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000"`
}

/** An IMAP date (`1-Feb-2024`) as the UTC midnight it starts. */
const searchDate = (value: string | undefined): number => {
  const m = /^(\d{1,2})-([A-Za-z]{3})-(\d{4})$/.exec(value ?? "")
  const month = m === null ? -1 : MONTHS.findIndex((x) => x.toLowerCase() === m[2]!.toLowerCase())
  if (m === null || month < 0) throw new SyntaxError(`bad date ${value}`)
  return Date.UTC(Number(m[3]), month, Number(m[1]))
}

const DAY = 86_400_000

/** LIST's patterns: `*` matches anything, `%` anything but the delimiter. */
const matches = (pattern: string, name: string) => {
  const re = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/%/g, "[^/]*")}$`, "i")
  return re.test(name)
}

const sameFlags = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((f, i) => f === b[i])

/**
 * `next` with the message objects of `prev` where a message is as it was: sessions then
 * tell an unchanged message by identity, and hold one object for it however many answers
 * they saw. Both lists are in UID order.
 */
const interned = (prev: MailboxState | undefined, next: MailboxState): MailboxState => {
  if (prev === undefined) return next
  const old = prev.messages
  let i = 0
  const messages = next.messages.map((m) => {
    while (i < old.length && old[i]!.uid < m.uid) i++
    const o = old[i]
    return o !== undefined && o.uid === m.uid && o.message_id === m.message_id && o.modseq === m.modseq && sameFlags(o.flags, m.flags) ? o : m
  })
  return { ...next, messages }
}

/**
 * The whole state from the known one and an answer of the changes since it (`uids` and the
 * changed messages): each UID's message is the changed one, else the known one. Undefined when
 * a UID is in neither (the known answer was not the one the changes follow): ask for the whole.
 */
const withChanges = (base: MailboxState, changes: MailboxState): MailboxState | undefined => {
  const changed = changes.messages
  const old = base.messages
  const messages: Array<MailboxMessage> = []
  let c = 0
  let b = 0
  for (const uid of changes.uids ?? []) {
    if (c < changed.length && changed[c]!.uid === uid) {
      messages.push(changed[c++]!)
      continue
    }
    while (b < old.length && old[b]!.uid < uid) b++
    if (b < old.length && old[b]!.uid === uid) messages.push(old[b]!)
    else return undefined
  }
  if (c < changed.length) return undefined
  const { uids: _uids, ...rest } = changes
  return { ...rest, messages }
}

interface Diff {
  /** What the session holds next: the state's own list when it is that list. */
  readonly kept: ReadonlyArray<MailboxMessage>
  /** Positions in the old list of the messages expunged. */
  readonly gone: ReadonlyArray<number>
  /** Positions in `kept` of the messages whose flags changed. */
  readonly flagged: ReadonlyArray<number>
  /** How many messages `kept` held before the new ones were added. */
  readonly before: number
  /** Whether a message of the old list is not in the state. */
  readonly missing: boolean
}

/**
 * What a session holding `old` tells its client to reach `next`. Both lists are in UID
 * order: one walk. Every idling session of a mailbox holds the same list and moves to the
 * same next state, so the walk is made once per list and state (`lastDiff`) and each
 * session only writes its lines.
 */
const lastDiff = new WeakMap<MailboxState, { readonly old: ReadonlyArray<MailboxMessage>; readonly diff: Diff }>()
const diffOf = (old: ReadonlyArray<MailboxMessage>, next: MailboxState, expunges: boolean): Diff => {
  const known = lastDiff.get(next)
  if (expunges && known?.old === old) return known.diff
  const fresh = next.messages
  const kept: Array<MailboxMessage> = []
  const gone: Array<number> = []
  const flagged: Array<number> = []
  let missing = false
  let j = 0
  for (let i = 0; i < old.length; i++) {
    const o = old[i]!
    while (j < fresh.length && fresh[j]!.uid < o.uid) j++
    const n = j < fresh.length && fresh[j]!.uid === o.uid ? fresh[j++] : undefined
    if (n === undefined) {
      missing = true
      if (expunges) gone.push(i)
      else kept.push(o)
      continue
    }
    if (n !== o && !sameFlags(o.flags, n.flags)) flagged.push(kept.length)
    kept.push(n)
  }
  const before = kept.length
  for (; j < fresh.length; j++) if (fresh[j]!.uid > (kept.at(-1)?.uid ?? 0)) kept.push(fresh[j]!)
  const same = kept.length === fresh.length && kept.every((m, i) => m === fresh[i])
  const diff = { kept: same ? fresh : kept, gone, flagged, before, missing }
  if (expunges) lastDiff.set(next, { old, diff })
  return diff
}

/** The position of the message of UID `uid` in a list in UID order, or -1. */
const positionOf = (messages: ReadonlyArray<MailboxMessage>, uid: number): number => {
  let lo = 0
  let hi = messages.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1
    const at = messages[mid]!.uid
    if (at === uid) return mid
    if (at < uid) lo = mid + 1
    else hi = mid - 1
  }
  return -1
}

type SearchNode =
  | { readonly kind: "all" }
  | { readonly kind: "and"; readonly nodes: ReadonlyArray<SearchNode> }
  | { readonly kind: "or"; readonly a: SearchNode; readonly b: SearchNode }
  | { readonly kind: "not"; readonly node: SearchNode }
  | { readonly kind: "test"; readonly test: (m: MailboxMessage, seq: number) => boolean }
  | { readonly kind: "text"; readonly q: string }

export class ImapServer extends Context.Service<ImapServer, { readonly port: number }>()("inbox/ImapServer") {
  static readonly layer = (options: ImapOptions) =>
    Layer.effect(ImapServer, Effect.gen(function*() {
      const engine = yield* Engine
      const run = Effect.runPromiseExitWith(yield* Effect.context<never>())
      const allowPlain = options.allowPlainLoopback === true
      const pollMs = options.idlePollMs ?? 10_000
      const secureContext: SecureContext | undefined = options.tls === undefined ? undefined : createSecureContext({ cert: options.tls.cert, key: options.tls.key })
      const sockets = new Set<Socket>()

      /**
       * ENVELOPE, BODYSTRUCTURE and BODY of messages by id, for every session: a message's
       * bytes never change, so what is read from them once stands (Dovecot's cache file keeps
       * the same). A FETCH of envelopes then reads no message twice; the oldest go past DERIVED_MAX.
       */
      const derived = new Map<string, Map<string, string>>()
      const DERIVED_MAX = 20_000
      const remember = (messageId: string, item: string, value: string) => {
        let known = derived.get(messageId)
        if (known === undefined) {
          if (derived.size >= DERIVED_MAX) derived.delete(derived.keys().next().value!)
          known = new Map()
          derived.set(messageId, known)
        }
        known.set(item, value)
        return value
      }

      /** The idling sessions of each inbox, woken when the engine signals a change of it. */
      const idlers = new Map<string, Set<() => void>>()
      yield* Stream.runForEach(engine.messagesChanged, (inboxId) =>
        Effect.sync(() => {
          for (const wake of idlers.get(inboxId) ?? []) wake()
        })).pipe(Effect.forkScoped)

      /** Syncs in flight, by key, inbox, mailbox and known fingerprint: one answers every session asking the same. */
      const inFlight = new Map<string, Promise<MailboxState>>()
      /**
       * The last full answer per key, inbox and mailbox: what SELECT shows when nothing changed
       * since; kept while a session has that mailbox selected (`holders`).
       */
      const lastState = new Map<string, MailboxState>()
      const holders = new Map<string, number>()
      const hold = (key: string) => void holders.set(key, (holders.get(key) ?? 0) + 1)
      const release = (key: string) => {
        const left = (holders.get(key) ?? 1) - 1
        if (left > 0) return void holders.set(key, left)
        holders.delete(key)
        lastState.delete(key)
      }
      const shared = (key: string, known: string | undefined, sync: () => Promise<MailboxState>): Promise<MailboxState> => {
        const asked = `${key}\0${known ?? ""}`
        const running = inFlight.get(asked)
        if (running !== undefined) return running
        const answer = sync().then((state) => {
          if (state.unchanged || !holders.has(key)) return state
          const kept = interned(lastState.get(key), state)
          lastState.set(key, kept)
          return kept
        }).finally(() => inFlight.delete(asked))
        inFlight.set(asked, answer)
        return answer
      }

      /**
       * A key admitted again (see `stillSignedIn`): one admission in flight answers every
       * session of the key that asks at that moment, as when one delivery wakes all its idlers,
       * so they count as one request against the key's limits, not one each.
       */
      const admitting = new Map<string, Promise<Exit.Exit<Principal, ApiError>>>()
      const admitShared = (key: string, context: { readonly clientIp: string; readonly requestId: string }) => {
        const running = admitting.get(key)
        if (running !== undefined) return running
        const admitted = run(engine.admit({ kind: "key", key }, context)).finally(() => admitting.delete(key))
        admitting.set(key, admitted)
        return admitted
      }

      const failureOf = (cause: Cause.Cause<unknown>) => {
        const found = Cause.findErrorOption(cause)
        return found._tag === "Some" ? found.value as ApiError : undefined
      }

      const handle = (initial: Socket, startsSecure: boolean) => {
        // An answer is its untagged lines, then the tagged one in a write of its own. With
        // Nagle's algorithm that last write waited for the client's acknowledgement of the
        // first, which a client delays (Linux: up to 40 ms): every command of a fresh
        // connection took that long, whatever its work.
        initial.setNoDelay(true)
        let socket: Socket = initial
        let secure = startsSecure
        let buffer: Buffer = Buffer.alloc(0)
        let running = false
        let closed = false
        let continued = -1
        let lineWaiter: ((line: string) => void) | undefined
        let user: { inboxId: string; email: string; principal: Principal; key: string; keyTag: string } | undefined
        /** `messages` is shared with the key's other sessions (the state's own list): replaced, never changed in place. */
        let selected: { name: string; readOnly: boolean; uidvalidity: number; uidnext: number; fingerprint: string; messages: ReadonlyArray<MailboxMessage> } | undefined
        const rawCache = new Map<string, { raw: Buffer; part: Part }>()
        /**
         * CONDSTORE (RFC 7162) enabled: by ENABLE, SELECT/EXAMINE (CONDSTORE) or the first
         * command that uses it (FETCH MODSEQ or CHANGEDSINCE, STORE UNCHANGEDSINCE, SEARCH
         * MODSEQ, STATUS HIGHESTMODSEQ); from then on every FETCH answer with flags carries MODSEQ.
         */
        let condstore = false
        /** Whether the SEARCH being answered has a MODSEQ key (its answer then ends with the highest modseq found). */
        let searchedModseq = false
        /** ENABLE UTF8=ACCEPT: mailbox names are UTF-8 both ways; before it, modified UTF-7 (RFC 3501 5.1.3). */
        let utf8 = false
        const mailboxIn = (token: Token | undefined) => {
          const text = textOf(token) ?? ""
          return utf8 ? text : decodeMailboxName(text)
        }
        const mailboxOut = (name: string) => str(utf8 ? name : encodeMailboxName(name))
        /** The shared state this session keeps alive by having its mailbox selected. */
        let holding: string | undefined
        const unselect = () => {
          selected = undefined
          if (holding !== undefined) release(holding)
          holding = undefined
        }
        const context = { clientIp: initial.remoteAddress ?? "", requestId: `imap-${Math.random().toString(36).slice(2)}` }

        const write = (data: string | Buffer) => {
          if (!closed && socket.writable) socket.write(data)
        }
        const untagged = (line: string) => write(`* ${line}\r\n`)
        /** An answer's lines, ready at once, in one write (one system call) rather than one each. */
        const together = (lines: () => void) => {
          const out = socket
          out.cork()
          try {
            lines()
          } finally {
            out.uncork()
          }
        }
        /** The next line the client sends, for the command that asked. */
        const waitLine = () =>
          new Promise<string>((resolve) => {
            lineWaiter = resolve
            queueMicrotask(drain)
          })

        const call = <N extends OperationName>(name: N, input: InputOf<N>): Promise<OutputOf<N>> =>
          run(engine.call(name, input, user === undefined ? LOCAL : { kind: "principal", principal: user.principal }, context)).then((exit) => {
            if (Exit.isSuccess(exit)) return exit.value
            const error = failureOf(exit.cause)
            if (error === undefined) void run(Effect.logError("IMAP command failed", exit.cause))
            throw new Refused(error)
          })

        /**
         * The signed-in key admitted again, as HTTP admits it on each request (from the key
         * cache): a key revoked or expired since sign-in ends the session with BYE. Answers
         * whether the session goes on.
         */
        const stillSignedIn = async (): Promise<boolean> => {
          if (user === undefined) return false
          const admitted = await admitShared(user.key, context)
          if (Exit.isSuccess(admitted)) {
            user.principal = admitted.value
            return true
          }
          if (failureOf(admitted.cause)?._tag !== "Unauthorized") return true
          untagged("BYE [UNAVAILABLE] The API key was revoked or has expired; sign in again")
          closed = true
          socket.end()
          return false
        }

        const canAuth = () => mayTakeCredentials(secure, socket.remoteAddress, allowPlain)
        const capabilities = () =>
          [
            "IMAP4rev1",
            "LITERAL+",
            "SASL-IR",
            "ID",
            "ENABLE",
            "IDLE",
            "NAMESPACE",
            "UIDPLUS",
            "MOVE",
            "UNSELECT",
            "SPECIAL-USE",
            "CHILDREN",
            "ESEARCH",
            "CONDSTORE",
            "UTF8=ACCEPT",
            ...(secureContext !== undefined && !secure ? ["STARTTLS"] : []),
            ...(user === undefined ? (canAuth() ? ["AUTH=PLAIN"] : ["LOGINDISABLED"]) : [])
          ].join(" ")

        const signIn = async (tag: string, username: string, password: string) => {
          if (!canAuth()) return write(`${tag} NO [PRIVACYREQUIRED] Use STARTTLS or the implicit-TLS port to sign in\r\n`)
          try {
            const answer = await call("mailboxes.signIn", { username, password, client_ip: context.clientIp })
            const admitted = await run(engine.admit({ kind: "key", key: password }, context))
            if (!Exit.isSuccess(admitted)) throw new Refused(failureOf(admitted.cause))
            user = { inboxId: answer.inbox_id, email: answer.email, principal: admitted.value, key: password, keyTag: createHash("sha256").update(password).digest("base64") }
            write(`${tag} OK [CAPABILITY ${capabilities()}] Signed in as ${answer.email}\r\n`)
          } catch (e) {
            const error = e instanceof Refused ? e.error : undefined
            if (error?._tag === "TooManyAttempts" || error?._tag === "RateLimited") write(`${tag} NO [UNAVAILABLE] Too many attempts, try again later\r\n`)
            else write(`${tag} NO [AUTHENTICATIONFAILED] Invalid credentials\r\n`)
          }
        }

        // ---- the selected mailbox ----

        const flagsLine = (m: MailboxMessage) => `FLAGS (${m.flags.join(" ")})`
        const modseqItem = (m: MailboxMessage) => `MODSEQ (${m.modseq})`
        /** FLAGS, and MODSEQ beside them once CONDSTORE is enabled. */
        const flagsAnswer = (m: MailboxMessage) => condstore ? `${flagsLine(m)} ${modseqItem(m)}` : flagsLine(m)

        /** The mailbox's state, `unchanged` when it is still `known`'s; shared with the key's other sessions (above). */
        const stateKey = (name: string) => `${user!.keyTag}\0${user!.inboxId}\0${name.toUpperCase() === "INBOX" ? "INBOX" : name.toLowerCase()}`
        const syncShared = (name: string, known?: string) => {
          const key = stateKey(name)
          // Holding the known answer, the server asks only for what changed since (and the UIDs).
          const base = known === undefined ? undefined : lastState.get(key)
          const changesOnly = base !== undefined && base.fingerprint === known
          return shared(key, known, async () => {
            const state = await call("mailboxes.sync", { inbox_id: user!.inboxId, mailbox: name, ...(known === undefined ? {} : { known }), ...(changesOnly ? { changes_only: true } : {}) })
            if (state.unchanged || state.uids === undefined || base === undefined) return state
            return withChanges(base, state) ?? call("mailboxes.sync", { inbox_id: user!.inboxId, mailbox: name })
          })
        }
        /** The whole state of a mailbox, from the key's last answer when nothing changed since. */
        const fullState = async (name: string): Promise<MailboxState> => {
          const last = lastState.get(stateKey(name))
          if (last === undefined) return syncShared(name)
          const state = await syncShared(name, last.fingerprint)
          return state.unchanged ? last : state
        }

        /**
         * The selected mailbox's state when it changed since `known`, else `unchanged`. When
         * another session of the key already holds a newer answer, that answer is checked
         * (one question shared by all of them) rather than each session asking for its own.
         */
        const changedSince = async (name: string, known: string): Promise<MailboxState> => {
          if (known === "") return fullState(name)
          const last = lastState.get(stateKey(name))
          if (last === undefined || last.fingerprint === known) return syncShared(name, known)
          const state = await syncShared(name, last.fingerprint)
          return state.unchanged ? last : state
        }

        /**
         * Syncs the selected mailbox and tells the client what changed (EXPUNGE, EXISTS, FETCH
         * FLAGS). With `holdFlags`, the flag changes are not told but answered (sequence
         * numbers): a FETCH tells them itself, once, rather than twice for a message it answers.
         */
        const refresh = async (state?: MailboxState, quiet = false, expunges = true, holdFlags = false): Promise<ReadonlyArray<number>> => {
          if (selected === undefined) return []
          const next = state ?? await changedSince(selected.name, selected.fingerprint)
          if (selected === undefined || next.unchanged || next.fingerprint === selected.fingerprint) return []
          const d = diffOf(selected.messages, next, expunges)
          // Expunges held back (a FETCH by sequence number) must still be found next time.
          selected.fingerprint = expunges || !d.missing ? next.fingerprint : ""
          selected.messages = d.kept
          selected.uidnext = next.uidnext
          if (quiet) return []
          // Highest first, so each sequence number is still right when it is sent.
          for (let g = d.gone.length - 1; g >= 0; g--) untagged(`${d.gone[g]! + 1} EXPUNGE`)
          if (!holdFlags) for (const at of d.flagged) untagged(`${at + 1} FETCH (UID ${d.kept[at]!.uid} ${flagsAnswer(d.kept[at]!)})`)
          if (d.kept.length !== d.before) untagged(`${d.kept.length} EXISTS`)
          return holdFlags ? d.flagged.map((at) => at + 1) : []
        }

        const select = async (tag: string, name: string, readOnly: boolean, parameters: Token | undefined) => {
          if (parameters !== undefined) {
            const asked = parameters.kind === "list" ? parameters.items.map((t) => (textOf(t) ?? "").toUpperCase()) : []
            if (asked.length === 0 || asked.some((p) => p !== "CONDSTORE")) throw new SyntaxError(`unknown SELECT parameters`)
            condstore = true
          }
          unselect()
          // Held first, so the answer is kept for the sessions that select it next.
          const key = stateKey(name)
          hold(key)
          let state: MailboxState
          try {
            state = await fullState(name)
          } catch (e) {
            release(key)
            throw e
          }
          holding = key
          selected = { name: state.name, readOnly, uidvalidity: state.uidvalidity, uidnext: state.uidnext, fingerprint: state.fingerprint, messages: state.messages }
          together(() => {
            untagged(`FLAGS (${SYSTEM_FLAGS.join(" ")})`)
            untagged(`OK [PERMANENTFLAGS (${readOnly ? "" : `${SYSTEM_FLAGS.join(" ")} \\*`})] Flags permitted`)
            untagged(`${state.messages.length} EXISTS`)
            untagged("0 RECENT")
            const unseen = state.messages.findIndex((m) => !m.flags.includes("\\Seen"))
            if (unseen >= 0) untagged(`OK [UNSEEN ${unseen + 1}] First unseen`)
            untagged(`OK [UIDVALIDITY ${state.uidvalidity}] UIDs valid`)
            untagged(`OK [UIDNEXT ${state.uidnext}] Predicted next UID`)
            untagged(`OK [HIGHESTMODSEQ ${state.highest_modseq}] Highest`)
            write(`${tag} OK [${readOnly ? "READ-ONLY" : "READ-WRITE"}] ${readOnly ? "EXAMINE" : "SELECT"} completed\r\n`)
          })
        }

        /** The messages a set names, with their sequence numbers, in mailbox order. */
        const targets = (setText: string, byUid: boolean) => {
          const messages = selected!.messages
          if (byUid) {
            const max = messages.at(-1)?.uid ?? 0
            const set = parseSet(setText, max)
            return messages.map((m, i) => ({ m, seq: i + 1 })).filter(({ m }) => inSet(set, m.uid))
          }
          const set = parseSet(setText, messages.length)
          return messages.map((m, i) => ({ m, seq: i + 1 })).filter(({ seq }) => inSet(set, seq))
        }

        const rawOf = async (m: MailboxMessage) => {
          const cached = rawCache.get(m.message_id)
          if (cached !== undefined) return cached
          const download = await call("messages.rawDownload", { inbox_id: user!.inboxId, message_id: m.message_id })
          const chunks: Array<Uint8Array> = []
          const read = await run(Stream.runForEach(download.body, (chunk) => Effect.sync(() => void chunks.push(chunk))))
          if (!Exit.isSuccess(read)) throw new Refused(undefined)
          const raw = Buffer.concat(chunks)
          const entry = { raw, part: parsePart(raw) }
          if (rawCache.size >= 32) rawCache.delete(rawCache.keys().next().value!)
          rawCache.set(m.message_id, entry)
          return entry
        }

        /** Tells the flags of these messages (by sequence number), as a change found by a sync. */
        const tellFlags = (seqs: ReadonlyArray<number>) => {
          for (const seq of seqs) {
            const m = selected?.messages[seq - 1]
            if (m !== undefined) untagged(`${seq} FETCH (UID ${m.uid} ${flagsAnswer(m)})`)
          }
        }

        /**
         * FETCH; `held.seqs` are the messages whose flag changes the sync before it found and left
         * to it: told here unless its answer tells them; what is left when it fails, the caller tells.
         */
        const fetch = async (tag: string, args: ReadonlyArray<Token>, byUid: boolean, held: { seqs: ReadonlyArray<number> }) => {
          const setText = textOf(args[0]) ?? ""
          const spec = args[1]
          if (spec === undefined) throw new SyntaxError("FETCH needs items")
          let items = (spec.kind === "list" ? spec.items : [spec]).map((t) => (textOf(t) ?? "").trim())
          const macro = items.length === 1 ? items[0]!.toUpperCase() : ""
          if (macro === "ALL") items = ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE"]
          else if (macro === "FAST") items = ["FLAGS", "INTERNALDATE", "RFC822.SIZE"]
          else if (macro === "FULL") items = ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODY"]
          if (byUid && !items.some((i) => i.toUpperCase() === "UID")) items = ["UID", ...items]
          const changedSince = fetchModifiers(args[2])
          if (changedSince !== undefined && !items.some((i) => i.toUpperCase() === "MODSEQ")) items = [...items, "MODSEQ"]
          const wantsModseq = items.some((i) => i.toUpperCase() === "MODSEQ")
          if (wantsModseq) condstore = true
          const wantsFlags = items.some((i) => i.toUpperCase() === "FLAGS")
          const fromRaw = items.filter((i) => !["UID", "FLAGS", "INTERNALDATE", "RFC822.SIZE", "MODSEQ"].includes(i.toUpperCase()))
          /** Whether message m's answer needs its bytes: an item read from them that is not remembered. */
          const needsRaw = (m: MailboxMessage) => fromRaw.some((i) => derived.get(m.message_id)?.has(i.toUpperCase()) !== true)
          const marksSeen = !selected!.readOnly && items.some((i) => /^(BODY\[|RFC822$|RFC822\.TEXT$|BINARY\[)/i.test(i))
          const list = changedSince === undefined ? targets(setText, byUid) : targets(setText, byUid).filter(({ m }) => m.modseq > changedSince)
          if (held.seqs.length > 0) {
            const answered = new Set(wantsFlags || marksSeen ? list.map(({ seq }) => seq) : [])
            tellFlags(held.seqs.filter((seq) => !answered.has(seq)))
            held.seqs = held.seqs.filter((seq) => answered.has(seq))
          }
          if (marksSeen) {
            const unseen = list.filter(({ m }) => !m.flags.includes("\\Seen")).map(({ m }) => m.uid)
            if (unseen.length > 0) {
              const state = await call("mailboxes.flags", { inbox_id: user!.inboxId, mailbox: selected!.name, uids: unseen, add: ["\\Seen"] })
              const now = new Map(state.messages.map((m) => [m.uid, m]))
              for (const entry of list) entry.m = now.get(entry.m.uid) ?? entry.m
              selected!.messages = selected!.messages.map((m) => now.get(m.uid) ?? m)
              // Only some messages were brought up to date: the next sync compares them all.
              selected!.fingerprint = ""
            }
          }
          let out: Array<Buffer> = []
          let outBytes = 0
          const flush = () => {
            if (out.length > 0) write(Buffer.concat(out))
            out = []
            outBytes = 0
          }
          // Bytes are read WINDOW messages at a time, concurrently: a round trip each, not one after another.
          const WINDOW = 16
          let window = new Map<string, Promise<{ raw: Buffer; part: Part }>>()
          for (const [at, { m, seq }] of list.entries()) {
            if (at % WINDOW === 0) {
              window = new Map(list.slice(at, at + WINDOW).filter(({ m: x }) => needsRaw(x)).map(({ m: x }) => [x.message_id, rawOf(x)]))
              // Each is awaited below; one refused must not leave the others unhandled.
              for (const p of window.values()) p.catch(() => undefined)
            }
            const parts: Array<string | Buffer> = []
            const pending = window.get(m.message_id)
            let entry = pending === undefined ? undefined : await pending
            // What was remembered when the window was read may have been forgotten since.
            if (entry === undefined && needsRaw(m)) entry = await rawOf(m)
            const cached = (item: string, make: () => string) => derived.get(m.message_id)?.get(item) ?? remember(m.message_id, item, make())
            for (const item of items) {
              const upper = item.toUpperCase()
              if (upper === "UID") parts.push(`UID ${m.uid}`)
              else if (upper === "FLAGS") parts.push(flagsLine(m))
              else if (upper === "MODSEQ") parts.push(modseqItem(m))
              else if (upper === "INTERNALDATE") parts.push(`INTERNALDATE ${internalDate(m.internal_date)}`)
              else if (upper === "RFC822.SIZE") parts.push(`RFC822.SIZE ${m.size}`)
              else if (upper === "ENVELOPE") parts.push(`ENVELOPE ${cached(upper, () => envelopeOf(entry!.part))}`)
              else if (upper === "BODYSTRUCTURE") parts.push(`BODYSTRUCTURE ${cached(upper, () => bodyStructureOf(entry!.part, true))}`)
              else if (upper === "BODY") parts.push(`BODY ${cached(upper, () => bodyStructureOf(entry!.part, false))}`)
              else if (upper === "RFC822" || upper === "RFC822.HEADER" || upper === "RFC822.TEXT") {
                const bytes = upper === "RFC822" ? entry!.raw : upper === "RFC822.HEADER" ? entry!.part.header : entry!.part.body
                parts.push(`${upper} {${bytes.length}}\r\n`, bytes)
              } else {
                const match = /^(BODY|BODY\.PEEK|BINARY|BINARY\.PEEK)\[([^\]]*)\](?:<(\d+)(?:\.(\d+))?>)?$/i.exec(item)
                if (match === null) throw new SyntaxError(`unknown FETCH item ${item}`)
                const inner = match[2]!
                const paren = inner.indexOf("(")
                const section = (paren < 0 ? inner : inner.slice(0, paren)).trim()
                const names = paren < 0 ? [] : inner.slice(paren + 1, inner.lastIndexOf(")")).split(/\s+/).map((n) => n.replace(/"/g, "")).filter((n) => n !== "")
                let bytes = sectionOf(entry!.raw, entry!.part, section, names) ?? Buffer.alloc(0)
                const origin = match[3] === undefined ? undefined : Number(match[3])
                if (origin !== undefined) bytes = bytes.subarray(origin, match[4] === undefined ? undefined : origin + Number(match[4]))
                const name = match[1]!.toUpperCase().startsWith("BINARY") ? "BINARY" : "BODY"
                parts.push(`${name}[${inner.toUpperCase()}]${origin === undefined ? "" : `<${origin}>`} {${bytes.length}}\r\n`, bytes)
              }
            }
            if (marksSeen && !wantsFlags) parts.push(flagsLine(m))
            if (condstore && !wantsModseq && (wantsFlags || marksSeen)) parts.push(modseqItem(m))
            const pieces: Array<Buffer> = [Buffer.from(`* ${seq} FETCH (`)]
            parts.forEach((p, i) => {
              // A literal's bytes follow its `{n}` line directly; items are separated by a space.
              if (i > 0 && !Buffer.isBuffer(p)) pieces.push(Buffer.from(" "))
              pieces.push(Buffer.isBuffer(p) ? p : Buffer.from(p, "utf8"))
            })
            pieces.push(Buffer.from(")\r\n"))
            // Answers go out in writes of about 64 KB, not one per message: a socket write is a system call.
            out.push(...pieces)
            outBytes += pieces.reduce((n, b) => n + b.length, 0)
            if (outBytes >= 65_536) flush()
          }
          flush()
          held.seqs = []
          write(`${tag} OK ${byUid ? "UID " : ""}FETCH completed\r\n`)
        }

        /** FETCH's modifiers (RFC 4466): CHANGEDSINCE n is the one known (QRESYNC's VANISHED is not offered). */
        const fetchModifiers = (token: Token | undefined): number | undefined => {
          if (token === undefined) return undefined
          if (token.kind !== "list") throw new SyntaxError("FETCH modifiers are a list")
          let changedSince: number | undefined
          for (let i = 0; i < token.items.length; i += 2) {
            const name = (textOf(token.items[i]) ?? "").toUpperCase()
            if (name !== "CHANGEDSINCE") throw new SyntaxError(`unknown FETCH modifier ${name}`)
            changedSince = modseqArg(token.items[i + 1])
          }
          if (changedSince !== undefined) condstore = true
          return changedSince
        }

        /** A mod-sequence argument: a decimal number (RFC 7162 mod-sequence-valzer). */
        const modseqArg = (token: Token | undefined): number => {
          const text = textOf(token) ?? ""
          if (!/^\d{1,19}$/.test(text)) throw new SyntaxError(`bad mod-sequence ${text}`)
          return Number(text)
        }

        const flagsArg = (token: Token | undefined): Array<string> =>
          token === undefined ? [] : token.kind === "list" ? token.items.map((t) => textOf(t) ?? "").filter((f) => f !== "") : [textOf(token) ?? ""].filter((f) => f !== "")

        const store = async (tag: string, args: ReadonlyArray<Token>, byUid: boolean) => {
          if (selected!.readOnly) return write(`${tag} NO [READ-ONLY] Mailbox is read-only\r\n`)
          const list = targets(textOf(args[0]) ?? "", byUid)
          // STORE's modifiers (RFC 4466): UNCHANGEDSINCE n (CONDSTORE) is the one known.
          let rest = args.slice(1)
          let unchangedSince: number | undefined
          if (rest[0]?.kind === "list") {
            const modifiers = rest[0].items
            for (let i = 0; i < modifiers.length; i += 2) {
              const name = (textOf(modifiers[i]) ?? "").toUpperCase()
              if (name !== "UNCHANGEDSINCE") throw new SyntaxError(`unknown STORE modifier ${name}`)
              unchangedSince = modseqArg(modifiers[i + 1])
            }
            if (unchangedSince !== undefined) condstore = true
            rest = rest.slice(1)
          }
          const action = (textOf(rest[0]) ?? "").toUpperCase()
          const flags = flagsArg(rest[1])
          const silent = action.endsWith(".SILENT")
          const mode = action.replace(/\.SILENT$/, "")
          if (!["FLAGS", "+FLAGS", "-FLAGS"].includes(mode)) throw new SyntaxError(`bad STORE ${action}`)
          const given = new Set(flags.map((f) => f.toLowerCase()))
          const current = [...new Set(list.flatMap(({ m }) => m.flags))]
          const add = mode === "-FLAGS" ? [] : flags
          const remove = mode === "+FLAGS" ? [] : mode === "-FLAGS" ? flags : current.filter((f) => !given.has(f.toLowerCase()))
          let modified: ReadonlyArray<number> = []
          if (list.length > 0) {
            const state = await call("mailboxes.flags", {
              inbox_id: user!.inboxId,
              mailbox: selected!.name,
              uids: list.map(({ m }) => m.uid),
              add,
              remove,
              ...(unchangedSince === undefined ? {} : { unchanged_since: unchangedSince })
            })
            const now = new Map(state.messages.map((m) => [m.uid, m]))
            const refused = new Set(state.modified)
            selected!.fingerprint = ""
            const messages = [...selected!.messages]
            selected!.messages = messages
            for (const { m, seq } of list) {
              const fresh = now.get(m.uid)
              if (fresh === undefined) continue
              messages[seq - 1] = fresh
              if (refused.has(m.uid)) continue
              const uid = byUid ? `UID ${fresh.uid} ` : ""
              // Silent still tells a CONDSTORE client the new MODSEQ (RFC 7162 3.1.3).
              if (!silent) untagged(`${seq} FETCH (${uid}${flagsAnswer(fresh)})`)
              else if (condstore) untagged(`${seq} FETCH (${uid}${modseqItem(fresh)})`)
            }
            modified = list.filter(({ m }) => refused.has(m.uid)).map(({ m, seq }) => byUid ? m.uid : seq)
          }
          const verb = `${byUid ? "UID " : ""}STORE`
          if (modified.length > 0) write(`${tag} OK [MODIFIED ${compactSet(modified)}] Conditional ${verb} failed for some messages\r\n`)
          else write(`${tag} OK ${verb} completed\r\n`)
        }

        const copy = async (tag: string, args: ReadonlyArray<Token>, byUid: boolean, move: boolean) => {
          const list = targets(textOf(args[0]) ?? "", byUid)
          const to = mailboxIn(args[1])
          const verb = `${byUid ? "UID " : ""}${move ? "MOVE" : "COPY"}`
          if (list.length === 0) return write(`${tag} OK ${verb} completed\r\n`)
          const result = await call("mailboxes.copy", { inbox_id: user!.inboxId, mailbox: selected!.name, uids: list.map(({ m }) => m.uid), to, move })
          const code = result.uids.length === 0 ? "" : `[COPYUID ${result.uidvalidity} ${result.uids.map(([s]) => s).join(",")} ${result.uids.map(([, d]) => d).join(",")}] `
          if (move) {
            if (code !== "") untagged(`OK ${code}Moved`)
            await refresh()
            write(`${tag} OK ${verb} completed\r\n`)
          } else write(`${tag} OK ${code}${verb} completed\r\n`)
        }

        const searchNode = (tokens: ReadonlyArray<Token>, at: { i: number }): SearchNode => {
          const token = tokens[at.i++]
          if (token === undefined) throw new SyntaxError("SEARCH needs a key")
          if (token.kind === "list") {
            const inner = { i: 0 }
            const nodes: Array<SearchNode> = []
            while (inner.i < token.items.length) nodes.push(searchNode(token.items, inner))
            return { kind: "and", nodes }
          }
          const key = (textOf(token) ?? "").toUpperCase()
          const arg = () => {
            const t = tokens[at.i++]
            if (t === undefined) throw new SyntaxError(`${key} needs an argument`)
            return textOf(t) ?? ""
          }
          const flag = (name: string, present: boolean): SearchNode => ({ kind: "test", test: (m) => m.flags.some((f) => f.toLowerCase() === name.toLowerCase()) === present })
          const day = (m: MailboxMessage) => Math.floor(new Date(m.internal_date).getTime() / DAY) * DAY
          const quote = (s: string) => `"${s.replace(/"/g, "")}"`
          switch (key) {
            case "ALL":
              return { kind: "all" }
            case "SEEN":
              return flag("\\Seen", true)
            case "UNSEEN":
            case "NEW":
              return flag("\\Seen", false)
            case "OLD":
            case "RECENT":
              return key === "OLD" ? { kind: "all" } : { kind: "not", node: { kind: "all" } }
            case "FLAGGED":
              return flag("\\Flagged", true)
            case "UNFLAGGED":
              return flag("\\Flagged", false)
            case "DELETED":
              return flag("\\Deleted", true)
            case "UNDELETED":
              return flag("\\Deleted", false)
            case "ANSWERED":
              return flag("\\Answered", true)
            case "UNANSWERED":
              return flag("\\Answered", false)
            case "DRAFT":
              return flag("\\Draft", true)
            case "UNDRAFT":
              return flag("\\Draft", false)
            case "KEYWORD":
              return flag(arg(), true)
            case "UNKEYWORD":
              return flag(arg(), false)
            case "SINCE":
            case "SENTSINCE": {
              const d = searchDate(arg())
              return { kind: "test", test: (m) => day(m) >= d }
            }
            case "BEFORE":
            case "SENTBEFORE": {
              const d = searchDate(arg())
              return { kind: "test", test: (m) => day(m) < d }
            }
            case "ON":
            case "SENTON": {
              const d = searchDate(arg())
              return { kind: "test", test: (m) => day(m) === d }
            }
            case "LARGER": {
              const n = Number(arg())
              return { kind: "test", test: (m) => m.size > n }
            }
            case "SMALLER": {
              const n = Number(arg())
              return { kind: "test", test: (m) => m.size < n }
            }
            case "MODSEQ": {
              // An entry name and type may come first (RFC 7162 3.1.5); modseqs are kept per
              // message, not per flag, so they narrow nothing and are passed over.
              if (tokens[at.i]?.kind === "string") at.i += 2
              const n = modseqArg(tokens[at.i++])
              condstore = true
              searchedModseq = true
              return { kind: "test", test: (m) => m.modseq >= n }
            }
            case "UID": {
              const set = parseSet(arg(), selected!.messages.at(-1)?.uid ?? 0)
              return { kind: "test", test: (m) => inSet(set, m.uid) }
            }
            case "NOT":
              return { kind: "not", node: searchNode(tokens, at) }
            case "OR": {
              const a = searchNode(tokens, at)
              return { kind: "or", a, b: searchNode(tokens, at) }
            }
            case "SUBJECT":
              return { kind: "text", q: `subject:${quote(arg())}` }
            case "FROM":
              return { kind: "text", q: `from:${quote(arg())}` }
            case "TO":
            case "CC":
            case "BCC":
              return { kind: "text", q: `to:${quote(arg())}` }
            case "TEXT":
            case "BODY":
              return { kind: "text", q: quote(arg()) }
            case "HEADER": {
              const name = arg().toLowerCase()
              const value = arg()
              if (value === "") return { kind: "all" }
              return { kind: "text", q: name === "subject" || name === "from" || name === "to" ? `${name}:${quote(value)}` : quote(value) }
            }
            default:
              if (/^[\d*:,]+$/.test(key)) {
                const set = parseSet(key, selected!.messages.length)
                return { kind: "test", test: (_m, seq) => inSet(set, seq) }
              }
              throw new SyntaxError(`unknown SEARCH key ${key}`)
          }
        }

        /** The messages the engine's search finds for `q` in this mailbox, by id, with their UIDs: every match, page by page. */
        const textMatches = async (q: string) => {
          const ids = new Map<string, number>()
          let token: string | undefined
          do {
            const result = await call("mailboxes.search", { inbox_id: user!.inboxId, mailbox: selected!.name, q, ...(token === undefined ? {} : { page_token: token }) })
            result.message_ids.forEach((id, i) => ids.set(id, result.uids[i]!))
            token = result.next_page_token
          } while (token !== undefined)
          return ids
        }

        const search = async (tag: string, args: ReadonlyArray<Token>, byUid: boolean) => {
          let tokens = args
          // ESEARCH (RFC 4731): RETURN (MIN MAX COUNT ALL) asks for an ESEARCH answer; RETURN () is ALL.
          let returns: ReadonlyArray<string> | undefined
          if ((textOf(tokens[0]) ?? "").toUpperCase() === "RETURN") {
            const options = tokens[1]
            if (options?.kind !== "list") throw new SyntaxError("RETURN needs a list of options")
            returns = options.items.map((t) => (textOf(t) ?? "").toUpperCase())
            const unknown = returns.find((r) => !["MIN", "MAX", "COUNT", "ALL"].includes(r))
            if (unknown !== undefined) throw new SyntaxError(`unknown RETURN option ${unknown}`)
            if (returns.length === 0) returns = ["ALL"]
            tokens = tokens.slice(2)
          }
          if ((textOf(tokens[0]) ?? "").toUpperCase() === "CHARSET") tokens = tokens.slice(2)
          searchedModseq = false
          const at = { i: 0 }
          const nodes: Array<SearchNode> = []
          while (at.i < tokens.length) nodes.push(searchNode(tokens, at))
          const root: SearchNode = { kind: "and", nodes }
          const texts = new Map<string, Map<string, number>>()
          const collect = async (node: SearchNode): Promise<void> => {
            if (node.kind === "text" && !texts.has(node.q)) texts.set(node.q, await textMatches(node.q))
            else if (node.kind === "and") for (const n of node.nodes) await collect(n)
            else if (node.kind === "or") {
              await collect(node.a)
              await collect(node.b)
            } else if (node.kind === "not") await collect(node.node)
          }
          await collect(root)
          const test = (node: SearchNode, m: MailboxMessage, seq: number): boolean => {
            switch (node.kind) {
              case "all":
                return true
              case "and":
                return node.nodes.every((n) => test(n, m, seq))
              case "or":
                return test(node.a, m, seq) || test(node.b, m, seq)
              case "not":
                return !test(node.node, m, seq)
              case "test":
                return node.test(m, seq)
              case "text":
                return texts.get(node.q)?.has(m.message_id) ?? false
            }
          }
          const messages = selected!.messages
          const found: Array<number> = []
          let highest = 0
          const wordSets = nodes.flatMap((n) => (n.kind === "text" ? [texts.get(n.q)!] : []))
          if (wordSets.length > 0 && wordSets.length === nodes.length) {
            // Words only (SEARCH TEXT quasar): each match is placed in the client's view by
            // its UID, not by a test of every message of the mailbox. A match the view does not
            // hold yet (or holds under another id) is left out, as the test would leave it.
            const fewest = wordSets.reduce((a, b) => (b.size < a.size ? b : a))
            const at: Array<number> = []
            for (const [id, uid] of fewest) {
              const i = positionOf(messages, uid)
              if (i >= 0 && messages[i]!.message_id === id && wordSets.every((t) => t === fewest || t.has(id))) at.push(i)
            }
            at.sort((a, b) => a - b)
            for (const i of at) found.push(byUid ? messages[i]!.uid : i + 1)
          } else {
            for (let i = 0; i < messages.length; i++) {
              if (!test(root, messages[i]!, i + 1)) continue
              highest = Math.max(highest, messages[i]!.modseq)
              found.push(byUid ? messages[i]!.uid : i + 1)
            }
          }
          // With a MODSEQ key, the answer tells the highest modseq of the messages found (RFC 7162 3.1.5);
          // such a SEARCH is never one of words only, so the general test above found them.
          const modseqOf = searchedModseq && found.length > 0 ? highest : undefined
          together(() => {
            if (returns === undefined) untagged(`SEARCH${found.length === 0 ? "" : ` ${found.join(" ")}`}${modseqOf === undefined ? "" : ` (MODSEQ ${modseqOf})`}`)
            else {
              // In mailbox order, so the first is the least and the last the greatest.
              const data = [
                ...(returns.includes("MIN") && found.length > 0 ? [`MIN ${found[0]}`] : []),
                ...(returns.includes("MAX") && found.length > 0 ? [`MAX ${found.at(-1)}`] : []),
                ...(returns.includes("COUNT") ? [`COUNT ${found.length}`] : []),
                ...(returns.includes("ALL") && found.length > 0 ? [`ALL ${compactSet(found)}`] : []),
                ...(modseqOf === undefined ? [] : [`MODSEQ ${modseqOf}`])
              ]
              untagged(`ESEARCH (TAG ${str(tag)})${byUid ? " UID" : ""}${data.length === 0 ? "" : ` ${data.join(" ")}`}`)
            }
            write(`${tag} OK ${byUid ? "UID " : ""}SEARCH completed\r\n`)
          })
        }

        const expunge = async (tag: string | undefined, uids: ReadonlyArray<number> | undefined) => {
          if (selected!.readOnly) {
            if (tag !== undefined) write(`${tag} NO [READ-ONLY] Mailbox is read-only\r\n`)
            return
          }
          await call("mailboxes.expunge", { inbox_id: user!.inboxId, mailbox: selected!.name, ...(uids === undefined ? {} : { uids }) })
          await refresh(undefined, tag === undefined)
          if (tag !== undefined) write(`${tag} OK EXPUNGE completed\r\n`)
        }

        const list = async (tag: string, args: ReadonlyArray<Token>, verb: "LIST" | "LSUB") => {
          let rest = args
          let specialOnly = false
          if (rest[0]?.kind === "list") {
            specialOnly = rest[0].items.some((t) => (textOf(t) ?? "").toUpperCase() === "SPECIAL-USE")
            rest = rest.slice(1)
          }
          const reference = mailboxIn(rest[0])
          const patternToken = rest[1]
          const patterns = patternToken?.kind === "list" ? patternToken.items.map((t) => mailboxIn(t)) : [mailboxIn(patternToken)]
          if (patterns.length === 1 && patterns[0] === "") {
            untagged(`${verb} (\\Noselect) "/" ""`)
            return write(`${tag} OK ${verb} completed\r\n`)
          }
          const { mailboxes } = await call("mailboxes.list", { inbox_id: user!.inboxId })
          for (const box of mailboxes) {
            if (specialOnly && box.special_use === null) continue
            if (!patterns.some((p) => matches(reference + p, box.name))) continue
            const attributes = ["\\HasNoChildren", ...(box.special_use === null ? [] : [box.special_use])]
            untagged(`${verb} (${attributes.join(" ")}) "/" ${mailboxOut(box.name)}`)
          }
          write(`${tag} OK ${verb} completed\r\n`)
        }

        const status = async (tag: string, args: ReadonlyArray<Token>) => {
          const name = mailboxIn(args[0])
          const wanted = args[1]?.kind === "list" ? args[1].items.map((t) => (textOf(t) ?? "").toUpperCase()) : []
          const state = await call("mailboxes.sync", { inbox_id: user!.inboxId, mailbox: name })
          const values: Record<string, number> = {
            MESSAGES: state.messages.length,
            UIDNEXT: state.uidnext,
            UIDVALIDITY: state.uidvalidity,
            UNSEEN: state.messages.filter((m) => !m.flags.includes("\\Seen")).length,
            RECENT: 0,
            DELETED: state.messages.filter((m) => m.flags.includes("\\Deleted")).length,
            SIZE: state.messages.reduce((n, m) => n + m.size, 0),
            HIGHESTMODSEQ: state.highest_modseq
          }
          if (wanted.includes("HIGHESTMODSEQ")) condstore = true
          untagged(`STATUS ${mailboxOut(name)} (${wanted.filter((w) => w in values).map((w) => `${w} ${values[w]}`).join(" ")})`)
          write(`${tag} OK STATUS completed\r\n`)
        }

        const append = async (tag: string, args: ReadonlyArray<Token>) => {
          const name = mailboxIn(args[0])
          const message = args.at(-1)
          if (message?.kind !== "string") throw new SyntaxError("APPEND needs a message literal")
          const flags = args[1]?.kind === "list" ? flagsArg(args[1]) : []
          const result = await call("mailboxes.append", { inbox_id: user!.inboxId, mailbox: name, raw: message.value, ...(flags.length === 0 ? {} : { flags: flags.join(",") }) })
          if (selected !== undefined && selected.name.toLowerCase() === name.toLowerCase()) await refresh()
          write(`${tag} OK ${result.uid === null ? "" : `[APPENDUID ${result.uidvalidity} ${result.uid}] `}APPEND completed\r\n`)
        }

        /**
         * IDLE: the session sleeps until the engine signals a change of its inbox (or
         * `pollMs` passes, for a signal lost), then syncs and tells the client; a signal
         * during a sync makes one more.
         */
        const idle = async (tag: string) => {
          write("+ idling\r\n")
          let done = false
          let pending = false
          let wakeUp: (() => void) | undefined
          const wake = () => {
            pending = true
            const resume = wakeUp
            wakeUp = undefined
            resume?.()
          }
          const inboxId = user!.inboxId
          const watching = idlers.get(inboxId) ?? new Set()
          idlers.set(inboxId, watching)
          watching.add(wake)
          const finished = waitLine().then((line) => {
            done = true
            wake()
            if (line.trim().toUpperCase() !== "DONE") write(`${tag} BAD Expected DONE\r\n`)
          })
          const watch = async () => {
            while (!done && !closed) {
              if (!pending) {
                let timer: ReturnType<typeof setTimeout> | undefined
                await new Promise<void>((resolve) => {
                  wakeUp = resolve
                  timer = setTimeout(resolve, pollMs)
                })
                clearTimeout(timer)
                wakeUp = undefined
              }
              pending = false
              if (done || closed) break
              // An idling client sends no command: its key is looked at each time it wakes.
              if (!(await stillSignedIn())) break
              if (selected !== undefined) await refresh().catch(() => undefined)
            }
          }
          try {
            const watched = watch()
            await finished
            // A sync under way finishes first, so its news come before the tagged answer.
            await watched
          } finally {
            watching.delete(wake)
            if (watching.size === 0) idlers.delete(inboxId)
          }
          if (!closed) write(`${tag} OK IDLE terminated\r\n`)
        }

        const authenticate = async (tag: string, args: ReadonlyArray<Token>) => {
          const mechanism = (textOf(args[0]) ?? "").toUpperCase()
          if (mechanism !== "PLAIN") return write(`${tag} NO [CANNOT] Only AUTHENTICATE PLAIN is supported\r\n`)
          if (!canAuth()) return write(`${tag} NO [PRIVACYREQUIRED] Use STARTTLS or the implicit-TLS port to sign in\r\n`)
          let response = textOf(args[1])
          if (response === undefined) {
            write("+ \r\n")
            response = await waitLine()
          }
          if (response.trim() === "*") return write(`${tag} BAD Authentication cancelled\r\n`)
          const [, username = "", password = ""] = Buffer.from(response.trim() === "=" ? "" : response.trim(), "base64").toString("utf8").split("\0")
          await signIn(tag, username, password)
        }

        const startTls = (tag: string) => {
          if (secureContext === undefined || secure) return write(`${tag} BAD STARTTLS is not available\r\n`)
          write(`${tag} OK Begin TLS negotiation now\r\n`)
          socket.removeAllListeners("data")
          const plain = socket
          const upgraded = new TLSSocket(plain, { isServer: true, secureContext })
          socket = upgraded
          secure = true
          buffer = Buffer.alloc(0)
          upgraded.on("data", onData)
          upgraded.on("error", () => plain.destroy())
        }

        const dispatch = async (bytes: Buffer) => {
          let tokens: ReadonlyArray<Token>
          try {
            tokens = tokenize(bytes)
          } catch (e) {
            return write(`* BAD ${e instanceof Error ? e.message : "Syntax error"}\r\n`)
          }
          const tag = textOf(tokens[0]) ?? "*"
          if (tokens[0]?.kind !== "atom" || !/^[\x21-\x7e]+$/.test(tag) || tag.includes("+") || tag.includes("{")) return write(`* BAD Missing tag\r\n`)
          let command = (textOf(tokens[1]) ?? "").toUpperCase()
          let args = tokens.slice(2)
          let byUid = false
          if (command === "UID") {
            byUid = true
            command = (textOf(args[0]) ?? "").toUpperCase()
            args = args.slice(1)
          }
          if (user !== undefined && !["CAPABILITY", "LOGOUT", "ID"].includes(command) && !(await stillSignedIn())) return
          const authed = user !== undefined
          const inMailbox = selected !== undefined
          try {
            if (command === "CAPABILITY") {
              untagged(`CAPABILITY ${capabilities()}`)
              return write(`${tag} OK CAPABILITY completed\r\n`)
            }
            if (command === "NOOP" || command === "CHECK") {
              if (inMailbox) await refresh()
              return write(`${tag} OK ${command} completed\r\n`)
            }
            if (command === "LOGOUT") {
              untagged("BYE Signing off")
              write(`${tag} OK LOGOUT completed\r\n`)
              closed = true
              return socket.end()
            }
            if (command === "ID") {
              untagged(`ID ("name" "inbox-engine" "vendor" "inbox-engine")`)
              return write(`${tag} OK ID completed\r\n`)
            }
            if (!authed) {
              if (command === "STARTTLS") return startTls(tag)
              if (command === "LOGIN") return await signIn(tag, textOf(args[0]) ?? "", textOf(args[1]) ?? "")
              if (command === "AUTHENTICATE") return await authenticate(tag, args)
              return write(`${tag} BAD Sign in first\r\n`)
            }
            switch (command) {
              case "SELECT":
              case "EXAMINE":
                return await select(tag, mailboxIn(args[0]), command === "EXAMINE", args[1])
              case "LIST":
              case "LSUB":
                return await list(tag, args, command)
              case "STATUS":
                return await status(tag, args)
              case "CREATE":
                await call("mailboxes.create", { inbox_id: user!.inboxId, name: mailboxIn(args[0]).replace(/\/$/, "") })
                return write(`${tag} OK CREATE completed\r\n`)
              case "DELETE":
              case "RENAME":
                return write(`${tag} NO [CANNOT] Mailboxes are labels: change the labels of the messages instead\r\n`)
              case "SUBSCRIBE":
              case "UNSUBSCRIBE":
                return write(`${tag} OK ${command} completed\r\n`)
              case "NAMESPACE":
                untagged(`NAMESPACE (("" "/")) NIL NIL`)
                return write(`${tag} OK NAMESPACE completed\r\n`)
              case "ENABLE": {
                const wanted = [...new Set(args.map((t) => (textOf(t) ?? "").toUpperCase()).filter((c) => c === "UTF8=ACCEPT" || c === "CONDSTORE"))]
                if (wanted.includes("UTF8=ACCEPT")) utf8 = true
                if (wanted.includes("CONDSTORE")) condstore = true
                untagged(`ENABLED${wanted.length === 0 ? "" : ` ${wanted.join(" ")}`}`)
                return write(`${tag} OK ENABLE completed\r\n`)
              }
              case "APPEND":
                return await append(tag, args)
              case "IDLE":
                return await idle(tag)
            }
            if (!inMailbox) return write(`${tag} BAD No mailbox selected\r\n`)
            // Changes made elsewhere show first; without UID, no EXPUNGE may renumber what the command names.
            const held = ["FETCH", "STORE", "SEARCH"].includes(command) ? await refresh(undefined, false, byUid, command === "FETCH") : []
            switch (command) {
              case "FETCH": {
                const pending = { seqs: held }
                try {
                  return await fetch(tag, args, byUid, pending)
                } finally {
                  // A FETCH that failed before its answers still tells them.
                  tellFlags(pending.seqs)
                }
              }
              case "STORE":
                return await store(tag, args, byUid)
              case "SEARCH":
                return await search(tag, args, byUid)
              case "COPY":
                return await copy(tag, args, byUid, false)
              case "MOVE":
                return await copy(tag, args, byUid, true)
              case "EXPUNGE":
                return await expunge(tag, byUid ? targets(textOf(args[0]) ?? "", true).map(({ m }) => m.uid) : undefined)
              case "CLOSE":
                await expunge(undefined, undefined)
                unselect()
                return write(`${tag} OK CLOSE completed\r\n`)
              case "UNSELECT":
                unselect()
                return write(`${tag} OK UNSELECT completed\r\n`)
            }
            return write(`${tag} BAD Unknown command ${command}\r\n`)
          } catch (e) {
            if (e instanceof SyntaxError) return write(`${tag} BAD ${e.message}\r\n`)
            if (e instanceof Refused) {
              const code = e.error?._tag === "NotFound" ? "[NONEXISTENT] " : e.error === undefined ? "[UNAVAILABLE] " : e.error._tag === "MissingPermission" ? "[NOPERM] " : ""
              return write(`${tag} NO ${code}${e.message}\r\n`)
            }
            void run(Effect.logError("IMAP command failed", e))
            return write(`${tag} NO [SERVERBUG] Internal error\r\n`)
          }
        }

        /**
         * Reads what the client sent: a line a running command waits for (IDLE's DONE,
         * AUTHENTICATE's answer), else the next command once the one before has finished, so
         * responses keep the order of the commands.
         */
        const drain = () => {
          for (;;) {
            if (closed) return
            if (lineWaiter !== undefined) {
              const lf = buffer.indexOf(10)
              if (lf < 0) return
              const line = buffer.subarray(0, lf).toString("utf8").replace(/\r$/, "")
              buffer = buffer.subarray(lf + 1)
              const waiter = lineWaiter
              lineWaiter = undefined
              waiter(line)
              continue
            }
            if (running) return
            const framed = frame(buffer)
            if (framed.kind === "incomplete") {
              if (framed.literal !== undefined && framed.literal.at !== continued) {
                continued = framed.literal.at
                write("+ Ready for literal data\r\n")
              }
              return
            }
            if (framed.kind === "too-long") {
              buffer = buffer.subarray(framed.consumed)
              write("* BAD Command line or literal too long\r\n")
              continue
            }
            buffer = buffer.subarray(framed.consumed)
            continued = -1
            running = true
            void dispatch(framed.bytes).finally(() => {
              running = false
              drain()
            })
          }
        }

        const onData = (chunk: Buffer) => {
          buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk])
          drain()
        }

        socket.on("data", onData)
        socket.setTimeout(30 * 60_000, () => {
          write("* BYE Idle for too long\r\n")
          socket.end()
        })
        const end = () => {
          closed = true
          unselect()
          const waiter = lineWaiter
          lineWaiter = undefined
          waiter?.("")
          sockets.delete(initial)
        }
        socket.on("close", end)
        socket.on("error", () => socket.destroy())
        sockets.add(initial)
        untagged(`OK [CAPABILITY ${capabilities()}] inbox-engine IMAP ready`)
      }

      const server: Server = options.implicitTls === true && secureContext !== undefined
        ? createTlsServer({ cert: options.tls!.cert, key: options.tls!.key }, (s) => handle(s, true))
        : createNetServer((s) => handle(s, false))
      const port = yield* Effect.acquireRelease(
        Effect.callback<number, Error>((resume) => {
          server.once("error", (e) => resume(Effect.fail(e)))
          server.listen(options.port, options.host, () => resume(Effect.succeed((server.address() as AddressInfo).port)))
        }),
        () =>
          Effect.callback<void>((resume) => {
            for (const s of sockets) s.destroy()
            server.close(() => resume(Effect.void))
          })
      ).pipe(Effect.orDie)
      server.on("error", (e) => void run(Effect.logWarning("IMAP server error", e)))
      yield* Effect.logInfo("IMAP server listening").pipe(Effect.annotateLogs({
        address: `${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
        tls: options.implicitTls === true ? "implicit" : options.tls === undefined ? "none" : "starttls"
      }))
      return ImapServer.of({ port })
    }))

  /** From the settings: INBOX_IMAP_LISTEN (STARTTLS) and INBOX_IMAPS_LISTEN (implicit TLS); off when unset. */
  static readonly layerConfig = Layer.unwrap(Effect.gen(function*() {
    const config = yield* mailAccessConfig
    const servers: Array<Layer.Layer<ImapServer, never, Engine>> = []
    const common = { allowPlainLoopback: config.allowPlainLoopback, ...(config.tls === undefined ? {} : { tls: config.tls }) }
    if (config.imap !== undefined) servers.push(ImapServer.layer({ ...config.imap, ...common }))
    if (config.imaps !== undefined) servers.push(ImapServer.layer({ ...config.imaps, ...common, implicitTls: true }))
    return servers.length === 0 ? Layer.empty as Layer.Layer<never, never, Engine> : Layer.mergeAll(...servers as [Layer.Layer<ImapServer, never, Engine>])
  }).pipe(Effect.orDie))
}
