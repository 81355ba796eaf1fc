/**
 * `pnpm bench search [messages]`: search at scale on PostgreSQL. Seeds one organization
 * (50 inboxes, threads of 4) with generated mail into the schema `bench_search` of
 * BENCH_DATABASE_URL (kept between runs, so the seed is paid once per size): a vocabulary
 * of 20,000 words in several languages with a Zipf word-frequency curve (a word's
 * frequency falls as 1/rank), subjects, bodies, senders and attachment names. Then it runs
 * rare, common, phrase, prefix and field-qualified queries through the engine's Search
 * service at inbox and organization level, each interleaved with a bare `pg` reference
 * (the same candidate-then-rank SQL written by hand, with the tsquery inline), and reports
 * p50/p95/p99 of both, the ratio, the seed's ingest rate with indexing on, and the index
 * size per million messages.
 */
import { Database, Search } from "@inbox/core"
import { engineLayer } from "@inbox/testkit"
import { Effect, ManagedRuntime } from "effect"
import pg from "pg"
import { performance } from "node:perf_hooks"
import { machine, writeSection } from "./report.ts"

const URL = process.env["BENCH_DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const SCHEMA = "bench_search"
const ORG = "org_bench"
const INBOXES = 50
const ROUNDS = 30

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

const seed = async (client: pg.Client, messages: number) => {
  const have = await client.query(`SELECT count(*)::int AS n FROM ${SCHEMA}.messages`)
  if (have.rows[0].n >= messages) return undefined
  await client.query(`SET search_path = ${SCHEMA}`)
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
  for (let from = start; from < messages; from += batch) {
    const to = Math.min(messages, from + batch) - 1
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
    process.stdout.write(`\rseeded ${to + 1} / ${messages}`)
  }
  const seconds = (performance.now() - began) / 1000
  process.stdout.write("\n")
  await client.query(`VACUUM ANALYZE ${SCHEMA}.messages`)
  await client.query(`VACUUM ANALYZE ${SCHEMA}.message_search`)
  return { inserted: messages - start, seconds }
}

/** The hand-written reference: the same candidate-then-rank plan, tsquery inline. */
const referenceSql = (place: string, tsquery: string, threads: boolean) => {
  const candidates = `SELECT s.message_id, s.thread_id, s."timestamp", s.search FROM message_search s JOIN messages m ON m.id = s.message_id
    WHERE ${place} AND s.search @@ '${tsquery.replaceAll("'", "''")}'::tsquery AND NOT m.hidden ORDER BY s."timestamp" DESC, s.message_id DESC LIMIT 500`
  const rank = `ts_rank(search, '${tsquery.replaceAll("'", "''")}'::tsquery)`
  return threads
    ? `SELECT thread_id FROM (SELECT thread_id, max("timestamp") AS last, max(${rank}) AS rank FROM (${candidates}) c GROUP BY thread_id) r ORDER BY rank DESC, last DESC LIMIT 21`
    : `SELECT message_id FROM (SELECT message_id, "timestamp", ${rank} AS rank FROM (${candidates}) c) r ORDER BY rank DESC, "timestamp" DESC LIMIT 21`
}

export const benchSearch = async (messages: number) => {
  const runtime = ManagedRuntime.make(engineLayer(Database.layerPostgres({ url: URL, searchPath: SCHEMA, maxConnections: 4 })))
  const admin = new pg.Client({ connectionString: URL })
  await admin.connect()
  await admin.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`)
  await runtime.runPromise(Effect.void) // migrations
  const seeded = await seed(admin, messages)
  await admin.query(`SET search_path = ${SCHEMA}, public`)
  const words = vocabulary()
  const principal = { organizationId: ORG, scope: { type: "organization" as const } }
  const queries: ReadonlyArray<{ readonly name: string; readonly q: string; readonly tsquery: string }> = [
    { name: "rare word", q: words[18_000]!, tsquery: `'${words[18_000]}'` },
    { name: "common word", q: "meeting ", tsquery: "'meeting'" },
    { name: "phrase", q: "\"the and\"", tsquery: "'the' <-> 'and'" },
    { name: "prefix", q: words[900]!.slice(0, 4), tsquery: `'${words[900]!.slice(0, 4)}':*` },
    { name: "field (subject:)", q: "subject:invoice", tsquery: "'invoice':A" }
  ]
  const rows: Array<string> = []
  for (const level of ["inbox", "organization"] as const) {
    for (const query of queries) {
      const ours: Array<number> = []
      const bare: Array<number> = []
      const place = level === "inbox" ? "s.inbox_id = 'inbox_b7'" : `s.organization_id = '${ORG}'`
      for (let round = 0; round < ROUNDS; round++) {
        let t = performance.now()
        await admin.query(referenceSql(place, query.tsquery, level === "organization"))
        bare.push(performance.now() - t)
        t = performance.now()
        await runtime.runPromise(Search.use((s) =>
          level === "inbox"
            ? Effect.asVoid(s.messages(principal, "inbox_b7", { q: query.q, limit: 20 }))
            : Effect.asVoid(s.threads(principal, {}, { q: query.q, limit: 20 }))
        ))
        ours.push(performance.now() - t)
      }
      const f = (x: number) => x.toFixed(1)
      rows.push(`| ${level} | ${query.name} | \`${query.q.trim()}\` | ${f(percentile(ours, 50))} | ${f(percentile(ours, 95))} | ${f(percentile(ours, 99))} | ${f(percentile(bare, 50))} | ${f(percentile(bare, 95))} | ${(percentile(ours, 50) / Math.max(0.01, percentile(bare, 50))).toFixed(2)} |`)
      console.log(rows[rows.length - 1])
    }
  }
  const size = await admin.query(`SELECT pg_relation_size('${SCHEMA}.message_search_vector') AS gin, pg_total_relation_size('${SCHEMA}.message_search') AS total,
    (SELECT count(*) FROM ${SCHEMA}.message_search)::int AS n`)
  const n = size.rows[0].n as number
  const perMillion = (bytes: number) => `${((bytes / n) * 1e6 / 2 ** 20).toFixed(0)} MiB`
  await admin.end()
  await runtime.dispose()
  return [
    `${machine()}, PostgreSQL at BENCH_DATABASE_URL, ${n.toLocaleString("en")} messages in one organization (${INBOXES} inboxes), ${ROUNDS} rounds per query, limit 20, ${new Date().toISOString().slice(0, 10)}.`,
    "",
    "| level | query | q | ours p50 ms | p95 | p99 | bare pg p50 ms | p95 | ratio (p50) |",
    "|---|---|---|---|---|---|---|---|---|",
    ...rows,
    "",
    `Index size per million messages: GIN ${perMillion(Number(size.rows[0].gin))}, message_search with all its indexes ${perMillion(Number(size.rows[0].total))}.`,
    seeded === undefined
      ? "Seed: reused from an earlier run."
      : `Seed with search indexing on (trigger and GIN): ${seeded.inserted.toLocaleString("en")} messages in ${seeded.seconds.toFixed(0)} s, ${(seeded.inserted / seeded.seconds).toFixed(0)} messages/s (batched INSERT ... SELECT of 20,000).`
  ].join("\n")
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const messages = Number(process.argv[2] ?? 1_000_000)
  benchSearch(messages).then((body) => {
    console.log(body)
    writeSection("Search", body)
  }).catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
