/**
 * `node --import tsx bench/search.ts [messages] [pglite messages]`: search at scale. Seeds one
 * organization (50 inboxes, threads of 4) with generated mail into the schema `bench_search`
 * of BENCH_DATABASE_URL (kept between runs, so the seed is paid once per size): a vocabulary
 * of 20,000 words in several languages with a Zipf word-frequency curve (a word's frequency
 * falls as 1/rank), subjects, bodies, senders and attachment names. Then it runs rare,
 * middle, common, phrase, prefix and field-qualified queries through the engine's Search
 * service at inbox and organization level, each interleaved with a bare `pg` reference (the
 * same statements the engine sends, written by hand with the tsquery inline, the same choice
 * of way), and reports p50/p95/p99 of both, the ratio, the way taken, the old single-statement
 * plan's p50 (a few rounds), the seed's ingest rate with indexing on, and the index size per
 * million messages. Then the same queries on PGlite (a folder under BENCH_PGLITE_DIR, kept),
 * ours only (PGlite lives inside our process: no bare client to interleave).
 */
import { Database, Search, SEARCH_CANDIDATES } from "@inbox/core/internal"
import { engineLayer } from "@inbox/testkit"
import { Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { loadavg } from "node:os"
import pg from "pg"
import { performance } from "node:perf_hooks"
import { machine, writeSection } from "./report.ts"

const URL = process.env["BENCH_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const SCHEMA = "bench_search"
const ORG = "org_bench"
const INBOXES = 50
const ROUNDS = Number(process.env["BENCH_SEARCH_ROUNDS"] ?? 60)
const OLD_ROUNDS = 3
const PGLITE_DIR = process.env["BENCH_PGLITE_DIR"] ?? "/tmp/inbox-bench-search-pglite"
/** The engine's default budget (SearchBudget): the bare reference chooses its way by the same rule. */
const PROBE = 300
const WALK = 30_000

/** What the seed needs of a client: pg.Client and PGlite both answer this. */
interface Queryable {
  query(text: string, params?: Array<unknown>): Promise<{ rows: Array<any> }>
}

// Words of several languages at the top of the curve, then generated ones.
const REAL = [
  "the", "and", "to", "of", "meeting", "invoice", "please", "thanks", "report", "project", "la", "le", "et", "réunion", "facture",
  "merci", "und", "der", "die", "rechnung", "straße", "grüße", "и", "в", "встреча", "счёт", "спасибо", "team", "budget", "review",
  "schedule", "payment", "delivery", "order", "customer", "support", "ticket", "update", "release", "contract", "café", "naïve"
]
const SYLLABLES = ["ka", "lo", "mi", "ren", "to", "sa", "vel", "dor", "qui", "ban", "tel", "mor", "fin", "gra", "pel", "zu", "nek", "hal", "ri", "os"]
const vocabulary = (): Array<string> => {
  const words = [...REAL]
  let n = 0
  while (words.length < 20_000) {
    let x = n++
    let w = ""
    do {
      w += SYLLABLES[x % SYLLABLES.length]
      x = Math.floor(x / SYLLABLES.length)
    } while (x > 0)
    if (w.length >= 4 && !words.includes(w)) words.push(w)
  }
  return words
}

const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0
}

const seed = async (client: Queryable, messages: number, schema: string) => {
  const have = await client.query(`SELECT count(*)::int AS n FROM ${schema}.messages`)
  if (have.rows[0].n >= messages) return undefined
  await client.query(`SET search_path = ${schema}`)
  const at = new Date("2025-01-01T00:00:00Z")
  await client.query(`INSERT INTO organizations (id, name, owner_email, created_at, updated_at) VALUES ($1, 'bench', 'b@bench.example', $2, $2) ON CONFLICT DO NOTHING`, [ORG, at])
  await client.query(`INSERT INTO pods (id, organization_id, name, is_default, created_at, updated_at) VALUES ('pod_bench', $1, 'default', true, $2, $2) ON CONFLICT DO NOTHING`, [ORG, at])
  for (let i = 0; i < INBOXES; i++) {
    await client.query(`INSERT INTO inboxes (id, organization_id, pod_id, username, domain, email, created_at, updated_at)
      VALUES ($1, $2, 'pod_bench', $3, 'bench.example', $4, $5, $5) ON CONFLICT DO NOTHING`, [`inbox_b${i}`, ORG, `u${i}`, `u${i}@bench.example`, at])
  }
  const words = vocabulary()
  const start = have.rows[0].n as number
  const batch = 5_000
  const began = performance.now()
  let state = 12345 + start
  const random = () => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  }
  // A word of rank r comes up with probability ~ 1/r: exp(random * ln V) is log-uniform.
  const word = () => words[Math.floor(Math.exp(random() * Math.log(words.length)))] ?? "the"
  const text = (n: number) => Array.from({ length: n }, word).join(" ")
  // Only the search trigger runs during the seed: the blob-reference and usage-metric
  // triggers update one shared row per message (every seeded message names the same raw
  // blob), which makes a batch quadratic; the seed is consistent without them. Each batch
  // runs as a replica session (those triggers skipped) with the search trigger set to fire
  // ALWAYS, put back afterwards.
  await client.query(`ALTER TABLE messages ENABLE ALWAYS TRIGGER messages_search`)
  for (let from = start; from < messages; from += batch) {
    const to = Math.min(messages, from + batch) - 1
    await client.query("BEGIN")
    await client.query("SET LOCAL session_replication_role = replica")
    await client.query(`
      INSERT INTO threads (id, organization_id, pod_id, inbox_id, subject, preview, senders, recipients, labels, last_message_id, message_count, size, last_at, hidden, created_at, updated_at)
      SELECT 'thr_b' || (i / 4), '${ORG}', 'pod_bench', 'inbox_b' || ((i / 4 * 4) % ${INBOXES}), 's', 'p', '{}', '{}', '{received}', 'msg_b' || i, 4, 1000,
        $3::timestamptz + (i || ' seconds')::interval, false, $3::timestamptz, $3::timestamptz
      FROM generate_series($1::int, $2::int) i WHERE i % 4 = 0 ON CONFLICT DO NOTHING`, [from, to, at])
    const subjects: Array<string> = []
    const bodies: Array<string> = []
    for (let i = from; i <= to; i++) {
      subjects.push(text(5 + (i % 3)))
      bodies.push(text(40 + (i % 40)))
    }
    await client.query(`
      INSERT INTO messages (id, organization_id, pod_id, inbox_id, thread_id, direction, state, rfc_message_id, parents, labels, "timestamp",
        sender, sender_address, recipients, recipient_addresses, subject, preview, size, text, headers, attachments, raw_sha256, created_at, updated_at)
      SELECT 'msg_b' || i, '${ORG}', 'pod_bench', 'inbox_b' || (((i / 4) * 4) % ${INBOXES}), 'thr_b' || (i / 4), 'received', 'stored', '<' || i || '@bench>', '{}',
        '{received}', $3::timestamptz + (i || ' seconds')::interval,
        'Sender ' || (i % 997) || ' <s' || (i % 997) || '@corp' || (i % 31) || '.example>', 's' || (i % 997) || '@corp' || (i % 31) || '.example',
        ARRAY['u' || (i % ${INBOXES}) || '@bench.example'], ARRAY['u' || (i % ${INBOXES}) || '@bench.example'], subject, left(body, 200), length(body), body, '{}'::jsonb,
        CASE WHEN i % 10 = 0 THEN jsonb_build_array(jsonb_build_object('attachment_id', 'att_' || i, 'filename', split_part(subject, ' ', 1) || '.pdf',
          'content_type', 'application/pdf', 'content_disposition', 'attachment', 'size', 1000, 'sha256', 'bench')) ELSE '[]'::jsonb END,
        'bench', $3::timestamptz, $3::timestamptz
      FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS x(subject, body, n), LATERAL (SELECT $1::int + n::int - 1 AS i) g WHERE $2::int >= g.i`, [from, to, at, subjects, bodies])
    await client.query("COMMIT")
    process.stdout.write(`\rseeded ${to + 1} / ${messages}`)
  }
  const seconds = (performance.now() - began) / 1000
  await client.query(`ALTER TABLE messages ENABLE TRIGGER messages_search`)
  process.stdout.write("\n")
  await client.query(`VACUUM ANALYZE ${schema}.messages`)
  await client.query(`VACUUM ANALYZE ${schema}.message_search`)
  await client.query(`VACUUM ANALYZE ${schema}.threads`)
  return { inserted: messages - start, seconds }
}

/** The old plan (before the probe): every match by whatever index the planner picks, then the newest 500 ranked. */
const oldSql = (place: string, tsquery: string, threads: boolean) => {
  const q = `'${tsquery.replaceAll("'", "''")}'::tsquery`
  const candidates = `SELECT s.message_id, s.thread_id, s."timestamp", s.search FROM message_search s JOIN messages m ON m.id = s.message_id
    WHERE ${place} AND s.search @@ ${q} AND NOT m.hidden ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT 500`
  return threads
    ? `SELECT thread_id FROM (SELECT thread_id, max("timestamp") AS last, max(ts_rank(search, ${q})) AS rank FROM (${candidates}) c GROUP BY thread_id) r ORDER BY rank DESC, last DESC LIMIT 21`
    : `SELECT message_id FROM (SELECT message_id, "timestamp", ts_rank(search, ${q}) AS rank FROM (${candidates}) c) r ORDER BY rank DESC, "timestamp" DESC LIMIT 21`
}

/**
 * The hand-written reference: the statements Search sends for its candidates (the probe,
 * then the walk or the match index by the same rule), tsquery inline; ranking and grouping
 * of the candidates in JS as the engine does. Returns the way it took.
 */
const bare = async (client: pg.Client, place: string, term: string | undefined, tsquery: string, threads: boolean) => {
  const q = `'${tsquery.replaceAll("'", "''")}'::tsquery`
  const newest = `SELECT s.message_id, s.thread_id, s."timestamp", s.hidden, s.search FROM message_search s WHERE ${place} ORDER BY s."timestamp" DESC, s.message_id DESC`
  const columns = `s.message_id AS id, s.thread_id, (extract(epoch FROM s."timestamp") * 1000000)::bigint::text AS at, ts_rank(s.search, ${q})::float8 AS rank`
  const where = `s.search @@ ${q} AND NOT s.hidden`
  const probed = (await client.query(`WITH s AS MATERIALIZED (${newest} LIMIT ${PROBE})
    (SELECT ${columns}, NULL::int AS scanned FROM s WHERE ${where} ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${SEARCH_CANDIDATES})
    UNION ALL SELECT NULL, NULL, NULL, NULL, count(*)::int FROM s`)).rows
  const scanned = probed.at(-1).scanned as number
  let rows = probed.slice(0, -1)
  let way = "probe"
  if (rows.length < SEARCH_CANDIDATES && scanned >= PROBE) {
    way = "match index"
    if (rows.length > 0 && (SEARCH_CANDIDATES * scanned) / rows.length <= WALK) {
      const walked = (await client.query(`SELECT ${columns} FROM (${newest} LIMIT ${WALK}) s
        WHERE ${where} ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${SEARCH_CANDIDATES}`)).rows
      if (walked.length >= SEARCH_CANDIDATES) {
        rows = walked
        way = "walk"
      }
    }
    if (way === "match index") {
      const over = SEARCH_CANDIDATES * 2
      const carried = term !== undefined
      const kept = (await client.query(`WITH k AS MATERIALIZED (SELECT * FROM (SELECT s.message_id, s."timestamp"${carried ? ", s.thread_id, s.hidden, s.search" : ""}
          FROM message_search s WHERE ${place} ${carried ? `AND s.search @@ '${term.replaceAll("'", "''")}'::tsquery` : ""} AND ${where} OFFSET 0) s
          ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${over})
        (SELECT ${columns}, NULL::int AS scanned
          FROM ${carried ? "k s" : "k JOIN message_search s ON s.message_id = k.message_id"}
          WHERE ${where} ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${SEARCH_CANDIDATES})
        UNION ALL SELECT NULL, NULL, NULL, NULL, count(*)::int FROM k`)).rows
      rows = kept.slice(0, -1)
      if (kept.at(-1).scanned >= over && rows.length < SEARCH_CANDIDATES) {
        rows = (await client.query(`SELECT ${columns} FROM (SELECT s.message_id, s.thread_id, s."timestamp", s.search FROM message_search s
          WHERE ${place} AND ${where} OFFSET 0) s ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT ${SEARCH_CANDIDATES}`)).rows
      }
    }
  }
  const ranked: Array<{ id: string; rank: number; at: bigint }> = []
  const byThread = new Map<string, { id: string; rank: number; at: bigint }>()
  for (const r of rows) {
    const at = BigInt(r.at)
    if (!threads) ranked.push({ id: r.id, rank: r.rank, at })
    else {
      const t = byThread.get(r.thread_id)
      if (t === undefined) byThread.set(r.thread_id, { id: r.thread_id, rank: r.rank, at })
      else {
        t.rank = Math.max(t.rank, r.rank)
        if (at > t.at) t.at = at
      }
    }
  }
  const list = threads ? [...byThread.values()] : ranked
  list.sort((a, b) => b.rank - a.rank || (b.at > a.at ? 1 : b.at < a.at ? -1 : 0) || (b.id > a.id ? 1 : -1))
  return { way, ids: list.slice(0, 21).map((r) => r.id) }
}

interface Case {
  readonly name: string
  readonly q: string
  readonly tsquery: string
}

// The generator's words do not follow the curve exactly (its LCG repeats), so each query's
// number of matches is counted and printed beside it.
const cases = (words: ReadonlyArray<string>): ReadonlyArray<Case> => [
  { name: "rare word", q: `${words[2_510]} `, tsquery: `'${words[2_510]}'` },
  { name: "uncommon word", q: `${words[2_460]} `, tsquery: `'${words[2_460]}'` },
  { name: "middle word", q: `${words[150]} `, tsquery: `'${words[150]}'` },
  { name: "common word", q: "meeting ", tsquery: "'meeting'" },
  { name: "phrase", q: "\"and to\"", tsquery: "'and' <-> 'to'" },
  { name: "prefix", q: words[900]!.slice(0, 4), tsquery: `'${words[900]!.slice(0, 4)}':*` },
  { name: "field (subject:)", q: "subject:invoice", tsquery: "'invoice':A" }
]

const f = (x: number) => x.toFixed(1)
const principal = { organizationId: ORG, scope: { type: "organization" as const } }

/** One search through the engine: an inbox's messages, or the organization's threads. */
const ours = (level: "inbox" | "organization", q: string) =>
  Search.use((s) =>
    level === "inbox"
      ? Effect.asVoid(s.messages(principal, "inbox_b8", { q, limit: 20 }))
      : Effect.asVoid(s.threads(principal, {}, { q, limit: 20 }))
  )

const load = () => loadavg().map((x) => x.toFixed(1)).join(" ")

export const benchSearch = async (messages: number) => {
  const runtime = ManagedRuntime.make(engineLayer(Database.layerPostgres({ url: URL, searchPath: SCHEMA, maxConnections: 4 })))
  const admin = new pg.Client({ connectionString: URL })
  await admin.connect()
  await admin.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`)
  await runtime.runPromise(Effect.void) // migrations
  const seeded = await seed(admin, messages, SCHEMA)
  await admin.query(`SET search_path = ${SCHEMA}, public`)
  const words = vocabulary()
  const rows: Array<string> = []
  const loads: Array<string> = [load()]
  for (const level of ["inbox", "organization"] as const) {
    for (const query of cases(words)) {
      const mine: Array<number> = []
      const theirs: Array<number> = []
      const place = level === "inbox" ? `s.inbox_id = 'inbox_b8' AND s.organization_id = '${ORG}'` : `s.organization_id = '${ORG}'`
      // the inbox's own term in its vectors (migration 0025)
      const term = level === "inbox" ? "' inbox inbox_b8'" : undefined
      let way = ""
      // Warm-up: one of each, not counted.
      await bare(admin, place, term, query.tsquery, level === "organization")
      await runtime.runPromise(ours(level, query.q))
      for (let round = 0; round < ROUNDS; round++) {
        let t = performance.now()
        way = (await bare(admin, place, term, query.tsquery, level === "organization")).way
        theirs.push(performance.now() - t)
        t = performance.now()
        await runtime.runPromise(ours(level, query.q))
        mine.push(performance.now() - t)
      }
      const matches = (await admin.query(`SELECT count(*)::int AS n FROM message_search s JOIN messages m ON m.id = s.message_id
        WHERE ${place} AND s.search @@ '${query.tsquery.replaceAll("'", "''")}'::tsquery AND NOT m.hidden`)).rows[0].n as number
      const old: Array<number> = []
      for (let round = 0; round < OLD_ROUNDS; round++) {
        const t = performance.now()
        await admin.query(oldSql(place, query.tsquery, level === "organization"))
        old.push(performance.now() - t)
      }
      rows.push(`| ${level} | ${query.name} | \`${query.q.trim()}\` | ${matches.toLocaleString("en")} | ${way} | ${f(percentile(mine, 50))} | ${f(percentile(mine, 95))} | ${f(percentile(mine, 99))} | ${f(percentile(theirs, 50))} | ${f(percentile(theirs, 95))} | ${f(percentile(theirs, 99))} | ${(percentile(mine, 50) / Math.max(0.01, percentile(theirs, 50))).toFixed(2)} | ${f(percentile(old, 50))} |`)
      console.log(rows[rows.length - 1], load())
    }
    loads.push(load())
  }
  const size = await admin.query(`SELECT pg_relation_size('${SCHEMA}.message_search_vector') AS gin, pg_total_relation_size('${SCHEMA}.message_search') AS total,
    (SELECT count(*) FROM ${SCHEMA}.message_search)::int AS n`)
  const n = size.rows[0].n as number
  const inInbox = (await admin.query(`SELECT count(*)::int AS n FROM message_search WHERE inbox_id = 'inbox_b8'`)).rows[0].n as number
  const perMillion = (bytes: number) => `${((bytes / n) * 1e6 / 2 ** 20).toFixed(0)} MiB`
  await admin.end()
  await runtime.dispose()
  return [
    `${machine()}, PostgreSQL at BENCH_DATABASE_URL, ${n.toLocaleString("en")} messages in one organization (${INBOXES} inboxes, of which the seed fills every other one; ${inInbox.toLocaleString("en")} in the inbox searched), ${ROUNDS} rounds per query after one warm-up, limit 20, ${new Date().toISOString().slice(0, 10)}. Load average (1, 5, 15 min) at the start, after the inbox rows and after the organization rows: ${loads.join("; ")} (other helpers share the 2 cores).`,
    "",
    "Ours: the Search service in process (the query compiled by the database, the candidates, the page's rows, highlights). Bare: the same candidate statements through `pg`, tsquery inline, ranked in JS. Way: how the candidates were found (probe: the newest 300 rows held them; walk: the time index read further, at most 30,000 rows; match index: the GIN index). Old plan: the single statement before this change (every match, then the newest 500), p50 of 3 runs.",
    "",
    "| level | query | q | matches | way | ours p50 ms | p95 | p99 | bare p50 ms | p95 | p99 | ratio (p50) | old plan p50 ms |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
    "",
    `Index size per million messages: GIN ${perMillion(Number(size.rows[0].gin))}, message_search with all its indexes ${perMillion(Number(size.rows[0].total))}.`,
    seeded === undefined
      ? "Seed: reused from an earlier run."
      : `Seed with search indexing on (the search trigger and GIN; the blob and usage triggers off): ${seeded.inserted.toLocaleString("en")} messages in ${seeded.seconds.toFixed(0)} s, ${(seeded.inserted / seeded.seconds).toFixed(0)} messages/s (batched INSERT ... SELECT of 5,000).`
  ].join("\n")
}

/** The same queries on PGlite (ours only): a data folder kept between runs. */
export const benchSearchPglite = async (messages: number) => {
  const runtime = ManagedRuntime.make(engineLayer(Database.layerPglite({ dataDir: PGLITE_DIR })))
  await runtime.runPromise(Effect.void) // migrations
  // PGlite has one connection, so the seed's BEGIN, SET LOCAL and COMMIT go through the engine's client in order.
  const db: Queryable = {
    query: (text, params = []) =>
      runtime.runPromise(SqlClient.SqlClient.use((sql) => sql.unsafe(text, params as Array<any>))).then((rows) => ({ rows: rows as Array<any> }))
  }
  const seeded = await seed(db, messages, "public")
  await db.query("SET search_path = public")
  const words = vocabulary()
  const rows: Array<string> = []
  const started = load()
  for (const level of ["inbox", "organization"] as const) {
    for (const query of cases(words)) {
      const mine: Array<number> = []
      await runtime.runPromise(ours(level, query.q))
      for (let round = 0; round < ROUNDS; round++) {
        const t = performance.now()
        await runtime.runPromise(ours(level, query.q))
        mine.push(performance.now() - t)
      }
      rows.push(`| ${level} | ${query.name} | \`${query.q.trim()}\` | ${f(percentile(mine, 50))} | ${f(percentile(mine, 95))} | ${f(percentile(mine, 99))} |`)
      console.log(rows[rows.length - 1], load())
    }
  }
  const n = (await db.query("SELECT count(*)::int AS n FROM message_search")).rows[0].n as number
  await runtime.dispose()
  return [
    `PGlite (in process, a data folder), ${n.toLocaleString("en")} messages, the same generator and queries, ${ROUNDS} rounds each, ours only. Load average at the start: ${started}, at the end: ${load()}.`,
    "",
    "| level | query | q | ours p50 ms | p95 | p99 |",
    "|---|---|---|---|---|---|",
    ...rows,
    "",
    seeded === undefined ? "Seed: reused from an earlier run." : `Seed: ${seeded.inserted.toLocaleString("en")} messages in ${seeded.seconds.toFixed(0)} s.`
  ].join("\n")
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const messages = Number(process.argv[2] ?? 1_000_000)
  const pgliteMessages = Number(process.argv[3] ?? 100_000)
  ;(async () => {
    const postgres = messages > 0 ? await benchSearch(messages) : "PostgreSQL: not run."
    console.log(postgres)
    const pglite = pgliteMessages > 0 ? await benchSearchPglite(pgliteMessages) : "PGlite: not run."
    console.log(pglite)
    writeSection("Search", `${postgres}\n\n${pglite}`)
  })().catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
