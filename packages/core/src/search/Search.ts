/**
 * Ranked search over messages (an inbox's) and threads (organization, pod or inbox), with
 * the query language of query.ts (spec: Messages `/search`, Threads `/threads/search`;
 * docs/search.md).
 *
 * How it stays fast at a million messages: only the newest SEARCH_CANDIDATES matches are
 * ranked, and they are found without collecting every match: a common word by reading the
 * place's time index newest first until enough rows match, a rare one by the GIN index on
 * the vector, whichever a probe of the newest rows says is cheaper (`candidates` below).
 * "Ranked" therefore means: among the newest SEARCH_CANDIDATES matches, by `ts_rank` with
 * subject above from above to above body, then newest first. What a user gives up: a
 * better match older than the newest SEARCH_CANDIDATES matches is not shown; narrowing the
 * query (more words, `before:`) reaches it. Pages are offsets into that ranking (a new
 * message may shift them by one). `allMatches` is the other answer, for IMAP SEARCH: every
 * match of an inbox (or of the part of it `within`, a condition on `s.message_id`, names),
 * unranked, in pages by id.
 *
 * Scope and hidden labels apply exactly as in lists: rows outside the key's scope are
 * absent, and spam, blocked, unauthenticated and trash messages are left out unless the
 * query asks for that label (`label:spam`, which needs `label_spam_read`).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { Permission } from "../access/permissions.ts"
import type { Principal } from "../access/Principal.ts"
import { visibleTo } from "../access/visibility.ts"
import type { MissingPermission, NotFound, ValidationError } from "../errors/errors.ts"
import { Inboxes } from "../inboxes/Inboxes.ts"
import { hiddenAmong, hiddenCondition, hiddenLabelPermissions } from "../messages/Messages.ts"
import { MessageRow, MessageSummary, SUMMARY_COLUMNS, ThreadRow, type ThreadSummary, toSummary, toThreadSummary } from "../messages/model.ts"
import { Pods } from "../pods/Pods.ts"
import { Line } from "../shared/fields.ts"
import { DEFAULT_LIMIT, type Page, PageQueryFields } from "../shared/pagination.ts"
import { decodeRows } from "../shared/sql.ts"
import { validationError } from "../shared/validation.ts"
import { foldForMatch, highlightTerms, MAX_QUERY_LENGTH, type Node, parseQuery } from "./query.ts"

/** The newest matches that are ranked (see the module comment). */
export const SEARCH_CANDIDATES = 500
const HIGHLIGHT_CHARS = 200

export const SearchQuery = Schema.Struct({ q: Line(MAX_QUERY_LENGTH), ...PageQueryFields })
export type SearchQuery = typeof SearchQuery.Type

export const MessageSearchResult = Schema.Struct({
  ...MessageSummary.fields,
  // A list of fragments (one today), the agentmail SDK's shape; the spec names the key only.
  highlights: Schema.Struct({ text: Schema.Array(Schema.String) })
})
export type MessageSearchResult = typeof MessageSearchResult.Type

/**
 * A part of an inbox that `allMatches` reads alone (IMAP: a mailbox): `join` joins at most
 * one row to each search row `s` (by `s.message_id`) and keeps only those it joins; `key` is
 * a number of that row carried back with each match (the message's UID there, so the IMAP
 * server places matches without reading its whole list).
 */
export interface Within {
  readonly join: Statement.Fragment
  readonly key: Statement.Fragment
}

export interface SearchPlace {
  readonly podId?: string | undefined
  readonly inboxId?: string | undefined
}

/**
 * How many matches are ranked (`candidates`), and how many of a place's newest rows a search
 * reads before it turns to the match index (see `candidates` in the layer): `probe` rows
 * first, then at most `walk`. A Reference so a test can make them small and see every way
 * give the same answer.
 */
export const SearchBudget = Context.Reference<{ readonly candidates: number; readonly probe: number; readonly walk: number }>("inbox/SearchBudget", {
  defaultValue: () => ({ candidates: SEARCH_CANDIDATES, probe: 300, walk: 30_000 })
})

/**
 * The term of an inbox's or pod's vector (migration 0025) as a tsquery: it starts with a
 * space, which no parsed word does, so only the place's own rows hold it.
 */
const placeTerm = (kind: "inbox" | "pod", id: string) => `'${` ${kind} ${id}`.replace(/['\\]/g, (c) => c + c)}'`

interface CandidateRow {
  readonly id: string
  readonly thread_id: string
  /** Microseconds since the epoch, as text: the exact order of the stored time. */
  readonly at: string
  readonly rank: number
}

interface Compiled {
  /**
   * The query's condition, on message_search `s` and, where `join` holds it, messages `m`:
   * only a label or attachment test reads messages; the rest, hidden labels included, is
   * answered by message_search alone.
   */
  readonly where: Statement.Fragment
  readonly join: Statement.Fragment
  /** A condition on message_search alone that every match meets (labels and attachments left out). */
  readonly matching: Statement.Fragment
  /** The query's top-level time bounds (before:, after:), which the time index can apply. */
  readonly range: Statement.Fragment
  readonly rank: Statement.Fragment
}

const WEIGHTS = { subject: "A", from: "B", to: "C" } as const

const offsetOf = (token: string | undefined): Effect.Effect<number, ValidationError> => {
  if (token === undefined) return Effect.succeed(0)
  const match = /^o(\d{1,6})$/.exec(Buffer.from(token, "base64url").toString("utf8"))
  return match === null ? Effect.fail(validationError([{ path: ["page_token"], message: "Invalid page token" }])) : Effect.succeed(Number(match[1]))
}
const tokenOf = (offset: number) => Buffer.from(`o${offset}`).toString("base64url")

type TextLeaf = Extract<Node, { _tag: "Text" }>

const textLeaves = (node: Node, positive = true): Array<{ readonly leaf: TextLeaf; readonly positive: boolean }> => {
  switch (node._tag) {
    case "Text":
      return [{ leaf: node, positive }]
    case "Not":
      return textLeaves(node.node, false)
    case "And":
    case "Or":
      return node.nodes.flatMap((n) => textLeaves(n, positive))
    default:
      return []
  }
}

/**
 * The permissions a search query needs for the hidden labels it names (`label:spam`): its
 * operations' `permissionsFor`. A query that does not parse needs none; the search refuses it.
 */
export const searchPermissions = (q: string): ReadonlyArray<Permission> => {
  const parsed = parseQuery(q)
  return parsed._tag === "Problem" ? [] : hiddenLabelPermissions(labelsAsked(parsed.node))
}

const labelsAsked = (node: Node): Array<string> =>
  node._tag === "Label" ? [node.label] : node._tag === "And" || node._tag === "Or" ? node.nodes.flatMap(labelsAsked) : []

/** Marks the query's words in a piece of the text around the first match, with `**`. */
export const highlight = (text: string, terms: ReadonlyArray<{ readonly word: string; readonly prefix: boolean }>): string => {
  // Each distinct word is folded and compared once: a body repeats its words.
  const seen = new Map<string, boolean>()
  const matches = (w: string) => {
    let hit = seen.get(w)
    if (hit === undefined) {
      const f = foldForMatch(w)
      hit = terms.some((t) => (t.prefix ? f.startsWith(t.word) : f === t.word))
      seen.set(w, hit)
    }
    return hit
  }
  // The first matching word, read lazily: a body of 20,000 characters is mostly after it.
  let first: number | undefined
  for (const m of text.matchAll(/[\p{L}\p{N}]+/gu)) {
    if (matches(m[0])) {
      first = m.index
      break
    }
  }
  const start = first === undefined ? 0 : Math.max(0, first - 60)
  const from = start === 0 ? 0 : (text.lastIndexOf(" ", start) + 1 || start)
  const piece = text.slice(from, from + HIGHLIGHT_CHARS).replace(/\s+/g, " ").trim()
  return piece.replace(/[\p{L}\p{N}]+/gu, (w) => (matches(w) ? `**${w}**` : w))
}

export class Search extends Context.Service<Search, {
  messages(principal: Principal, inboxId: string, query: SearchQuery): Effect.Effect<Page<MessageSearchResult>, NotFound | ValidationError | MissingPermission>
  threads(principal: Principal, place: SearchPlace, query: SearchQuery): Effect.Effect<Page<ThreadSummary>, NotFound | ValidationError | MissingPermission>
  /**
   * Every match of `q` in an inbox, unranked and uncapped (IMAP SEARCH answers all of a
   * mailbox's matches, RFC 9051 6.4.4): the ids after `after`, in id order, at most `limit`.
   * Same query language, scope and hidden labels as `messages`; the caller pages by the last id.
   * `inbox` is one the caller found for `principal` (Inboxes.find): found again here, it was
   * one more round trip of every IMAP SEARCH. `within` narrows the matches to a part of the
   * inbox and gives each its number there (see Within).
   */
  allMatches(principal: Principal, inbox: { readonly id: string }, q: string, after: string | undefined, limit: number, within?: Within): Effect.Effect<ReadonlyArray<{ readonly id: string; readonly key: number | null }>, ValidationError>
}>()("inbox/Search") {
  static readonly layerNoDeps = Layer.effect(Search, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const inboxes = yield* Inboxes
    const pods = yield* Pods
    const summaryColumns = sql.literal(SUMMARY_COLUMNS.map((c) => `"${c}"`).join(", "))

    /**
     * The query's condition and its ranking tsquery. Each term is turned into a tsquery by
     * the database first (inbox_search_query: folded and parsed as documents are), then the
     * condition carries them as constants, so the planner sees what it estimates.
     */
    const compile = Effect.fn("Search.compile")(function*(principal: Principal, q: string) {
      const parsed = parseQuery(q)
      if (parsed._tag === "Problem") return yield* parsed.error
      const node = parsed.node
      // Their permissions were checked when the operation admitted the query (permissionsFor).
      const requested = hiddenAmong(labelsAsked(node))
      const leaves = textLeaves(node)
      const resolved = leaves.length === 0 ? [] : yield* sql<{ q: string }>`
        SELECT inbox_search_query(t, w, p::boolean)::text AS q
        FROM unnest(${leaves.map((l) => l.leaf.text)}::text[], ${leaves.map((l) => (l.leaf.field === undefined ? "" : WEIGHTS[l.leaf.field]))}::text[],
          ${leaves.map((l) => String(l.leaf.prefix))}::text[]) WITH ORDINALITY AS x(t, w, p, n)
        ORDER BY n`.pipe(Effect.orDie)
      const tsquery = new Map(leaves.map((l, i) => [l.leaf, resolved[i]?.q ?? ""]))
      /**
       * The SQL of a node. `relaxed` (true or false: the sign it stands under) gives instead a
       * condition on message_search alone that every match meets: a label or attachment test
       * becomes TRUE where it could only narrow the match, FALSE under a NOT.
       */
      const condition = (n: Node, relaxed?: boolean): Statement.Fragment => {
        switch (n._tag) {
          case "Text": {
            const text = tsquery.get(n) ?? ""
            // A term the parser finds no word in matches everything, as a left-out word would.
            return text === "" ? sql`TRUE` : sql`s.search @@ ${text}::tsquery`
          }
          case "Label":
            return relaxed === undefined ? sql`m.labels @> ARRAY[${n.label}]::text[]` : relaxed ? sql`TRUE` : sql`FALSE`
          case "HasAttachment":
            return relaxed === undefined ? sql`m.attachments <> '[]'::jsonb` : relaxed ? sql`TRUE` : sql`FALSE`
          case "Before":
            return sql`s."timestamp" < ${n.at}`
          case "After":
            return sql`s."timestamp" >= ${n.at}`
          case "Not":
            return sql`NOT (${condition(n.node, relaxed === undefined ? undefined : !relaxed)})`
          case "And":
            return sql.and(n.nodes.map((c) => condition(c, relaxed)))
          case "Or":
            return sql.or(n.nodes.map((c) => condition(c, relaxed)))
        }
      }
      const ranked = leaves.filter((l) => l.positive).map((l) => tsquery.get(l.leaf) ?? "").filter((t) => t !== "")
      // before: and after: that every match must meet also bound the walk down the time index.
      const range = (node._tag === "And" ? node.nodes : [node]).filter((n) => n._tag === "Before" || n._tag === "After")
      const readsMessages = (n: Node): boolean =>
        n._tag === "Label" || n._tag === "HasAttachment" || ((n._tag === "And" || n._tag === "Or") && n.nodes.some(readsMessages)) ||
        (n._tag === "Not" && readsMessages(n.node))
      const hidden = hiddenCondition(sql, requested, { hidden: "s.hidden", labels: "m.labels" })
      return {
        where: sql`${condition(node)} ${hidden}`,
        join: readsMessages(node) ? sql`JOIN messages m ON m.id = s.message_id` : sql``,
        // With no hidden label asked for (then neither is m.labels read), every match is unhidden.
        matching: requested.length === 0 ? sql`${condition(node, true)} ${hidden}` : condition(node, true),
        range: range.length === 0 ? sql`` : sql`AND ${sql.and(range.map((n) => condition(n)))}`,
        rank: ranked.length === 0 ? sql`0` : sql`ts_rank(s.search, ${ranked.map((t) => `(${t})`).join(" | ")}::tsquery)`,
        terms: highlightTerms(node)
      }
    })

    const visible = (principal: Principal) => visibleTo(sql, principal, { organization: "s.organization_id", pod: "s.pod_id", inbox: "s.inbox_id" })

    /**
     * The newest SEARCH_CANDIDATES visible matches of a place, each with its rank. Three
     * ways give the same rows; the cheapest is chosen by reading the place's newest rows:
     *  1. the probe: the newest `probe` rows of the place (its time index), tested with the
     *     query. When they hold enough matches, or are all the place has, that is the answer.
     *  2. the walk: when the probe's share of matches says the candidates lie within the
     *     newest `walk` rows, the time index is read further, stopping at the last candidate.
     *     A common word fills its candidates after a few hundred rows, whatever its count.
     *  3. the match index: otherwise (a rare word, or the walk ran out of budget) the GIN
     *     index gives every match, which for such a query are few; the newest are kept.
     * So no way reads more than about `walk` rows, or the matches of a query that has few.
     */
    const candidates = Effect.fn("Search.candidates")(function*(place: Statement.Fragment, compiled: Compiled, term: string | undefined) {
      const budget = yield* SearchBudget
      const need = budget.candidates
      const newest = sql`SELECT s.message_id, s.thread_id, s."timestamp", s.hidden, s.search FROM message_search s WHERE ${place} ${compiled.range}
        ORDER BY s."timestamp" DESC, s.message_id DESC`
      const columns = sql`s.message_id AS id, s.thread_id, (extract(epoch FROM s."timestamp") * 1000000)::bigint::text AS at, ${compiled.rank}::float8 AS rank`
      const probed = yield* sql<CandidateRow & { scanned: number | null }>`
        WITH s AS MATERIALIZED (${newest} LIMIT ${budget.probe})
        (SELECT ${columns}, NULL::int AS scanned FROM s ${compiled.join} WHERE ${compiled.where}
          ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${need})
        UNION ALL SELECT NULL, NULL, NULL, NULL, count(*)::int FROM s`.pipe(Effect.orDie)
      const scanned = probed.at(-1)?.scanned ?? 0
      const found = probed.slice(0, -1)
      if (found.length >= need || scanned < budget.probe) return found
      // Matches are about found/scanned of the rows: a walk would read need / that share.
      if (found.length > 0 && (need * scanned) / found.length <= budget.walk) {
        const walked = yield* sql<CandidateRow>`SELECT ${columns} FROM (${newest} LIMIT ${budget.walk}) s ${compiled.join}
          WHERE ${compiled.where} ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${need}`.pipe(Effect.orDie)
        if (walked.length >= need) return walked
      }
      // The match index. OFFSET 0 keeps the time order out of the matching, so the planner
      // finds the matches by the GIN index (or whatever it finds cheapest for all of them)
      // from message_search alone, then sorts them; only a label or attachment test looks
      // the newest few up in messages. Should those lose too many, every match is looked up.
      // An inbox's or pod's matches are found by the GIN index with the place's own term
      // (`term`, migration 0025) beside the query's: few rows out of the heap, which carry
      // their vectors and spare a lookup by key each. Across an organization the sort
      // carries ids and times only: with each row's vector (about a kilobyte) the sort of a
      // few thousand matches was most of the statement's time; the kept rows' vectors are
      // read again by key for the rank.
      const over = need * 2
      const carried = term !== undefined
      const kept = yield* sql<CandidateRow & { scanned: number | null }>`WITH
        k AS MATERIALIZED (SELECT * FROM (SELECT s.message_id, s."timestamp"${carried ? sql`, s.thread_id, s.hidden, s.search` : sql``}
            FROM message_search s WHERE ${place} ${carried ? sql`AND s.search @@ ${term}::tsquery` : sql``} AND ${compiled.matching} OFFSET 0) s
          ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${over})
        (SELECT ${columns}, NULL::int AS scanned
          FROM ${carried ? sql`k s` : sql`k JOIN message_search s ON s.message_id = k.message_id`}
          ${compiled.join} WHERE ${compiled.where}
          ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${need})
        UNION ALL SELECT NULL, NULL, NULL, NULL, count(*)::int FROM k`.pipe(Effect.orDie)
      if ((kept.at(-1)?.scanned ?? 0) < over || kept.length - 1 >= need) return kept.slice(0, -1)
      return yield* sql<CandidateRow>`SELECT ${columns} FROM (
          SELECT s.message_id, s.thread_id, s."timestamp", s.search FROM message_search s ${compiled.join}
          WHERE ${place} AND ${compiled.where} OFFSET 0) s
        ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${need}`.pipe(Effect.orDie)
    })

    /** The ranked ids (messages or threads) of one page, plus one more to tell if a page follows. */
    const rankedPage = Effect.fn("Search.rankedPage")(function*(
      place: Statement.Fragment,
      term: string | undefined,
      compiled: Compiled,
      key: "id" | "thread_id",
      offset: number,
      limit: number
    ) {
      const rows = (yield* candidates(place, compiled, term)).map((r) => ({ ...r, time: BigInt(r.at) }))
      let ranked: Array<{ readonly id: string; rank: number; time: bigint }> = rows
      if (key === "thread_id") {
        // A thread ranks by its best match and dates from its newest.
        const threads = new Map<string, { id: string; rank: number; time: bigint }>()
        for (const r of rows) {
          const t = threads.get(r.thread_id)
          if (t === undefined) threads.set(r.thread_id, { id: r.thread_id, rank: r.rank, time: r.time })
          else {
            t.rank = Math.max(t.rank, r.rank)
            if (r.time > t.time) t.time = r.time
          }
        }
        ranked = [...threads.values()]
      }
      // rank, then newest, then id: a total order, so pages do not overlap.
      ranked.sort((a, b) => b.rank - a.rank || (b.time > a.time ? 1 : b.time < a.time ? -1 : 0) || (b.id > a.id ? 1 : b.id < a.id ? -1 : 0))
      return ranked.slice(offset, offset + limit + 1).map((r) => ({ id: r.id }))
    })

    const pageOf = <A>(ids: ReadonlyArray<{ id: string }>, items: ReadonlyArray<A>, offset: number, limit: number): Page<A> =>
      ids.length > limit
        ? { items, limit, next_page_token: tokenOf(offset + limit) }
        : { items, limit }

    const BodyRow = Schema.Struct({ ...MessageRow.fields, body: Schema.String })

    return Search.of({
      messages: Effect.fn("Search.messages")(function*(principal, inboxId, query) {
        const inbox = yield* inboxes.find(principal, inboxId)
        const offset = yield* offsetOf(query.page_token)
        const limit = query.limit ?? DEFAULT_LIMIT
        const compiled = yield* compile(principal, query.q)
        const ids = yield* rankedPage(sql`s.inbox_id = ${inbox.id} AND ${visible(principal)}`, placeTerm("inbox", inbox.id), compiled, "id", offset, limit)
        const pageIds = ids.slice(0, limit).map((r) => r.id)
        const rows = pageIds.length === 0 ? [] : yield* sql`SELECT ${summaryColumns}, left(coalesce(text, preview), 20000) AS body
          FROM messages WHERE inbox_id = ${inbox.id} AND id = ANY(${pageIds}::text[])`.pipe(decodeRows(BodyRow))
        const byId = new Map(rows.map((r) => [r.id, r]))
        const items = pageIds.flatMap((id) => {
          const row = byId.get(id)
          if (row === undefined) return []
          // The body's words around the first match; the subject when only it matched.
          const inBody = highlight(row.body, compiled.terms)
          const inSubject = inBody.includes("**") ? inBody : highlight(row.subject, compiled.terms)
          return [{ ...toSummary(row), highlights: { text: [inSubject.includes("**") ? inSubject : inBody] } }]
        })
        return pageOf(ids, items, offset, limit)
      }),
      allMatches: Effect.fn("Search.allMatches")(function*(principal, inbox, q, after, limit, within) {
        const compiled = yield* compile(principal, q)
        // The place's own term lets the GIN index find the inbox's matches alone (migration 0025).
        // OFFSET 0 keeps the id order out of the matching, as in `candidates`: walking the key
        // in order would test every vector of the inbox. Paging by id keeps each answer bounded.
        return yield* sql<{ id: string; key: number | null }>`SELECT id, key FROM (
            SELECT s.message_id AS id, ${within === undefined ? sql`NULL` : within.key}::float8 AS key
            FROM message_search s ${compiled.join} ${within === undefined ? sql`` : within.join}
            WHERE s.inbox_id = ${inbox.id} AND ${visible(principal)} AND s.search @@ ${placeTerm("inbox", inbox.id)}::tsquery
              AND ${compiled.where} ${after === undefined ? sql`` : sql`AND s.message_id > ${after}`} OFFSET 0) x
          ORDER BY id LIMIT ${limit}`.pipe(Effect.orDie)
      }),
      threads: Effect.fn("Search.threads")(function*(principal, place, query) {
        const offset = yield* offsetOf(query.page_token)
        const limit = query.limit ?? DEFAULT_LIMIT
        let where: Statement.Fragment = sql`${visible(principal)}`
        let term: string | undefined
        if (place.inboxId !== undefined) {
          const inbox = yield* inboxes.find(principal, place.inboxId)
          where = sql`s.inbox_id = ${inbox.id} AND ${where}`
          term = placeTerm("inbox", inbox.id)
        } else if (place.podId !== undefined) {
          const pod = yield* pods.find(principal, place.podId)
          where = sql`s.pod_id = ${pod.id} AND ${where}`
          term = placeTerm("pod", pod.id)
        } else {
          where = sql`s.organization_id = ${principal.organizationId} AND ${where}`
        }
        const compiled = yield* compile(principal, query.q)
        const ids = yield* rankedPage(where, term, compiled, "thread_id", offset, limit)
        const pageIds = ids.slice(0, limit).map((r) => r.id)
        const rows = pageIds.length === 0 ? [] : yield* sql`SELECT * FROM threads s WHERE id = ANY(${pageIds}::text[]) AND ${visible(principal)}`.pipe(decodeRows(ThreadRow))
        const byId = new Map(rows.map((r) => [r.id, r]))
        const items = pageIds.flatMap((id) => {
          const row = byId.get(id)
          return row === undefined ? [] : [toThreadSummary(row)]
        })
        return pageOf(ids, items, offset, limit)
      })
    })
  }))

  /** With the services it uses (Inboxes, Pods); the ports are the caller's. */
  static readonly layer = Search.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(Inboxes.layer, Pods.layer)))
}
