/**
 * The seed for the listing benchmark: N messages (default 1,000,000) in one organization,
 * written straight into the database in batches of multi-row INSERTs (one JSON parameter
 * per batch, expanded by `json_populate_recordset`), which works alike on PGlite and
 * PostgreSQL and needs no COPY support from the driver.
 *
 * The mail is shaped like an agent's mailbox: 10 inboxes, conversations of 1 to 5
 * messages (a received message, then replies alternating sent and received), senders
 * drawn from 3,000 contacts with a few frequent ones, a year of timestamps, `unread`,
 * `important` and user labels, and a few spam and trash threads that lists hide. Thread
 * summaries are computed by the engine's own rules (messages/aggregate.ts), so a seeded
 * thread is what the engine would have written for the same messages. Everything is drawn
 * from a fixed-seed generator: two seeds of the same size are the same mail (ids aside).
 *
 * The seeded messages reference raw bytes that are not in the BlobStore: the bench reads
 * lists and threads, never raw downloads. Within a batch, session_replication_role =
 * replica skips the foreign-key checks and the blob reference trigger (the rows are
 * consistent by construction); that is what makes 1,000,000 rows take minutes, not tens.
 *
 * A seeded organization is found again by its owner address (`seed-N@bench.example`) and
 * reused when complete, with a fresh API key; so the 1M seed runs once per database.
 *
 * Run alone: `INBOX_DATABASE_URL=postgres://... node --import tsx bench/seed.ts [N]`
 * (prints one JSON line: organization, key, inboxes).
 */
import { NodeRuntime } from "@effect/platform-node"
import { ApiKeys, Engine, Inboxes, Organizations } from "@inbox/core/internal"
import { type MessageFacts, summarise } from "../packages/core/src/messages/aggregate.ts"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"

export const INBOXES = 10
const CONTACTS = 3_000
const BATCH = 2_500
const DAY = 86_400_000
/** The seeded year ends here, so a seed is the same whenever it runs. */
const END = Date.parse("2026-11-01T00:00:00.000Z")
const SPAN = 365 * DAY
const USER_LABELS = ["invoices", "newsletter", "support", "orders"] as const

export interface Seeded {
  readonly organizationId: string
  readonly key: string
  readonly inboxIds: ReadonlyArray<string>
  readonly messages: number
  /** Seconds spent inserting; 0 when an earlier seed was reused. */
  readonly seconds: number
}

/** mulberry32: a small fixed-seed generator, so every seed draws the same mail. */
const generator = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

/** Contact number n's address; conversations draw n skewed toward 0, so contact(0) is the most frequent sender. */
export const contact = (n: number) => `contact${n}@customer${n % 300}.example`

const WORDS = "order invoice meeting shipment contract renewal question update report schedule payment account delivery access review".split(" ")

interface SeedRow {
  readonly facts: MessageFacts
  readonly json: Record<string, unknown>
}

/** Seeds `n` messages spread over `inboxCount` inboxes (10 unless asked: the dashboard bench wants one). */
export const seed = (n: number, inboxCount: number = INBOXES) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const organizations = yield* Organizations
    const keys = yield* ApiKeys
    const inboxes = yield* Inboxes
    const owner = inboxCount === INBOXES ? `seed-${n}@bench.example` : `seed-${n}-${inboxCount}@bench.example`

    const found = yield* sql<{ id: string; complete: boolean }>`SELECT id, name = 'complete' AS complete FROM organizations WHERE owner_email = ${owner}`
    if (found[0] !== undefined && found[0].complete) {
      const organizationId = found[0].id
      const ids = yield* sql<{ id: string }>`SELECT id FROM inboxes WHERE organization_id = ${organizationId} ORDER BY username`
      const key = (yield* keys.issue(organizationId, { name: "bench" })).api_key
      return { organizationId, key, inboxIds: ids.map((r) => r.id), messages: n, seconds: 0 } satisfies Seeded
    }
    // A seed that stopped halfway is started again from nothing.
    if (found[0] !== undefined) yield* sql`DELETE FROM organizations WHERE id = ${found[0].id}`

    const started = performance.now()
    const { organization, defaultPodId } = yield* organizations.create({ ownerEmail: owner, verified: true, plan: "scale", name: "seeding" })
    const boxes: Array<{ id: string; email: string }> = []
    for (let i = 0; i < inboxCount; i++) {
      const row = yield* inboxes.insert(organization.id, defaultPodId, { username: `seed${n}-${i}` }, { username: `seed${n}-${i}`, domain: "bench.example" })
      boxes.push({ id: row.id, email: row.email })
    }
    const key = (yield* keys.issue(organization.id, { name: "bench" })).api_key

    const random = generator(20_261_124)
    const tag = createHash("sha256").update(organization.id).digest("hex").slice(0, 8)
    let counter = 0
    const nextId = (prefix: string) => `${prefix}_${tag}${(counter++).toString(16).padStart(16, "0")}`

    /** One conversation: its messages oldest first, as JSON rows and as the facts of the summary. */
    const conversation = (index: number, threads: number, threadId: string): ReadonlyArray<SeedRow> => {
      const box = boxes[index % inboxCount]!
      const r = random()
      const hidden = r < 0.03 ? "spam" : r < 0.05 ? "trash" : undefined
      const size = hidden === "spam" ? 1 : 1 + Math.floor(random() ** 1.6 * 5)
      const who = contact(Math.floor(random() ** 3 * CONTACTS))
      const topic = `${WORDS[Math.floor(random() * WORDS.length)]} ${WORDS[Math.floor(random() * WORDS.length)]} #${index}`
      const userLabel = random() < 0.3 ? USER_LABELS[Math.floor(random() * USER_LABELS.length)] : undefined
      let at = END - SPAN + Math.floor((index / threads) * SPAN)
      const rows: Array<SeedRow> = []
      const rfcIds: Array<string> = []
      for (let k = 0; k < size; k++) {
        at += k === 0 ? 0 : 60_000 + Math.floor(random() * DAY)
        const sent = k % 2 === 1
        const id = nextId("msg")
        const rfc = `<${id}.${k}@${sent ? "bench.example" : "customer.example"}>`
        const labels = sent
          ? ["sent"]
          : [
            "received",
            ...(random() < 0.3 ? ["unread"] : []),
            ...(random() < 0.1 ? ["important"] : []),
            ...(userLabel === undefined ? [] : [userLabel]),
            ...(hidden === undefined ? [] : [hidden])
          ]
        const from = sent ? box.email : who
        const to = sent ? [who] : [box.email]
        const subject = k === 0 ? topic : `Re: ${topic}`
        const preview = `${sent ? "Thanks" : "Hello"}, about the ${topic}: message ${k + 1} of the conversation, with the details we discussed.`
        const bytes = 1_500 + Math.floor(random() ** 4 * 120_000)
        const text = `${preview}\n\n${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(1 + Math.floor(random() * 6))}`
        const timestamp = new Date(at)
        const parents = [...rfcIds]
        rows.push({
          facts: { id, direction: sent ? "sent" : "received", timestamp, sender: from, recipients: to, labels, subject, preview, size: bytes },
          json: {
            id,
            organization_id: organization.id,
            pod_id: defaultPodId,
            inbox_id: box.id,
            thread_id: threadId,
            direction: sent ? "sent" : "received",
            state: sent ? "sent" : "stored",
            rfc_message_id: rfc,
            in_reply_to: parents.at(-1) ?? null,
            references: parents.length === 0 ? null : parents,
            parents,
            labels,
            timestamp: timestamp.toISOString(),
            sender: from,
            sender_address: from.toLowerCase(),
            recipients: to,
            cc: null,
            bcc: null,
            recipient_addresses: to.map((a) => a.toLowerCase()),
            subject,
            preview,
            size: bytes,
            text,
            html: null,
            extracted_text: null,
            extracted_html: null,
            extracted_text_is_text: true,
            extracted_html_is_html: false,
            headers: { "message-id": rfc, subject, from, to: to.join(", ") },
            attachments: [],
            raw_sha256: createHash("sha256").update(rfc).digest("hex"),
            open_token: null,
            created_at: timestamp.toISOString(),
            updated_at: timestamp.toISOString()
          }
        })
        rfcIds.push(rfc)
      }
      return rows
    }

    // The number of conversations is chosen so the messages come to about n (mean size 2.3),
    // then the last batches are cut to land exactly on n.
    const threads = Math.ceil(n / 2.3)
    let written = 0
    let index = 0
    while (written < n) {
      const messages: Array<Record<string, unknown>> = []
      const summaries: Array<Record<string, unknown>> = []
      while (messages.length < BATCH && written + messages.length < n) {
        const threadId = nextId("thr")
        const rows = conversation(index, threads, threadId).slice(0, n - written - messages.length)
        const t = summarise(rows.map((r) => r.facts))!
        const first = rows[0]!.json
        messages.push(...rows.map((r) => r.json))
        summaries.push({
          id: threadId,
          organization_id: organization.id,
          pod_id: defaultPodId,
          inbox_id: first["inbox_id"],
          subject: t.subject,
          preview: t.preview,
          senders: t.senders,
          recipients: t.recipients,
          labels: t.labels,
          last_message_id: t.last_message_id,
          message_count: t.message_count,
          size: t.size,
          received_at: t.received_at?.toISOString() ?? null,
          sent_at: t.sent_at?.toISOString() ?? null,
          last_at: t.last_at.toISOString(),
          hidden: t.hidden,
          created_at: first["created_at"],
          updated_at: t.last_at.toISOString()
        })
        index++
      }
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`SET LOCAL session_replication_role = replica`
        yield* sql`INSERT INTO threads SELECT * FROM json_populate_recordset(NULL::threads, ${JSON.stringify(summaries)}::json)`
        yield* sql`INSERT INTO messages (${sql.literal(MESSAGE_COLUMNS.map((c) => `"${c}"`).join(", "))})
          SELECT ${sql.literal(MESSAGE_COLUMNS.map((c) => `"${c}"`).join(", "))} FROM json_populate_recordset(NULL::messages, ${JSON.stringify(messages)}::json)`
      }))
      written += messages.length
      if (written % 100_000 < BATCH) console.error(`seed: ${written.toLocaleString("en-US")} of ${n.toLocaleString("en-US")} messages`)
    }
    yield* sql`UPDATE organizations SET name = 'complete' WHERE id = ${organization.id}`
    yield* sql`ANALYZE messages`
    yield* sql`ANALYZE threads`
    return {
      organizationId: organization.id,
      key,
      inboxIds: boxes.map((b) => b.id),
      messages: n,
      seconds: Math.round((performance.now() - started) / 100) / 10
    } satisfies Seeded
  })

/** Every stored column of messages (`hidden` is generated by the database). */
const MESSAGE_COLUMNS = [
  "id", "organization_id", "pod_id", "inbox_id", "thread_id", "direction", "state", "rfc_message_id", "in_reply_to",
  "references", "parents", "labels", "timestamp", "sender", "sender_address", "recipients", "cc", "bcc",
  "recipient_addresses", "subject", "preview", "size", "text", "html", "extracted_text", "extracted_html", "extracted_text_is_text", "extracted_html_is_html", "headers",
  "attachments", "raw_sha256", "open_token", "created_at", "updated_at"
] as const

if (import.meta.url === `file://${process.argv[1]}`) {
  const n = Number(process.argv[2] ?? "1000000")
  NodeRuntime.runMain(
    seed(n).pipe(
      Effect.tap((s) => Effect.sync(() => process.stdout.write(`${JSON.stringify(s)}\n`))),
      Effect.provide(Engine.layerConfig)
    )
  )
}
