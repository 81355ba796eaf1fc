/**
 * The mailbox of `pnpm bench imap` (bench/imap.ts): N plain-text messages, the same bytes
 * for the engine and for Dovecot, drawn from a fixed-seed generator (message i is always
 * the same message). One word, `quasar`, is in every 500th body, so SEARCH TEXT quasar
 * finds N / 500 messages on both sides (checked), an index's job rather than a scan's.
 *
 * Run as a script (`node --import tsx bench/imap-seed.ts N` with INBOX_DATABASE_URL), it
 * stores the N messages in one inbox through the engine's own delivery path
 * (`Inbound.deliver`, whose group commit writes many deliveries per transaction: parsed,
 * threaded, labelled, search-indexed and evented as SMTP or /inbound/raw would), 64 at a
 * time, and prints one JSON line: the inbox's address and an organization key. A complete
 * seed of the same N in that database is found again by its owner address and reused.
 */
import { NodeRuntime } from "@effect/platform-node"
import { ApiKeys, Engine, Inbound, Inboxes, Organizations } from "@inbox/core/internal"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The word every 500th message carries: SEARCH TEXT finds these. */
export const RARE_WORD = "quasar"
export const RARE_EVERY = 500
/** The seeded messages' dates run a year back from here, one per ~5 minutes. */
const START = Date.parse("2025-11-01T00:00:00.000Z")

const WORDS = (
  "order invoice meeting shipment contract renewal question update report schedule payment account delivery access review " +
  "project budget forecast customer support ticket release deploy server backup network storage license vendor travel hotel"
).split(" ")

/** mulberry32, seeded per message: message i is the same whenever and wherever it is made. */
const generator = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

export interface BenchMessage {
  readonly raw: Buffer
  readonly date: Date
}

/** Message i (0-based) to `to`: headers as a mail client writes them and a 1 to 4 KB body. */
export const benchMessage = (i: number, to: string): BenchMessage => {
  const random = generator(i + 1)
  const pick = () => WORDS[Math.floor(random() * WORDS.length)]!
  const date = new Date(START + i * 300_000)
  const sender = `contact${Math.floor(random() ** 2 * 3000)}@customer${i % 300}.example`
  const subject = `${pick()} ${pick()} ${pick()} #${i}`
  const lines: Array<string> = []
  const words = 150 + Math.floor(random() * 450)
  let line: Array<string> = []
  for (let w = 0; w < words; w++) {
    line.push(i % RARE_EVERY === 0 && w === 40 ? RARE_WORD : pick())
    if (line.length === 12) {
      lines.push(line.join(" "))
      line = []
    }
  }
  if (line.length > 0) lines.push(line.join(" "))
  const raw = [
    `Return-Path: <${sender}>`,
    `From: Contact ${i % 3000} <${sender}>`,
    `To: <${to}>`,
    `Subject: ${subject}`,
    `Date: ${date.toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: <imap-bench-${i}@customer${i % 300}.example>`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: 7bit",
    "",
    ...lines,
    ""
  ].join("\r\n")
  return { raw: Buffer.from(raw), date }
}

export interface ImapSeeded {
  readonly email: string
  readonly key: string
  readonly messages: number
  /** Seconds spent storing; 0 when an earlier seed was reused. */
  readonly seconds: number
}

export const seedImap = (n: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const owner = `imap-${n}@bench.example`
    const found = yield* sql<{ id: string; complete: boolean }>`SELECT id, name = 'complete' AS complete FROM organizations WHERE owner_email = ${owner}`
    const keys = yield* ApiKeys
    if (found[0] !== undefined && found[0].complete) {
      const email = (yield* sql<{ email: string }>`SELECT email FROM inboxes WHERE organization_id = ${found[0].id}`)[0]!.email
      return { email, key: (yield* keys.issue(found[0].id, { name: "bench" })).api_key, messages: n, seconds: 0 } satisfies ImapSeeded
    }
    if (found[0] !== undefined) yield* sql`DELETE FROM organizations WHERE id = ${found[0].id}`
    const started = performance.now()
    const { organization, defaultPodId } = yield* (yield* Organizations).create({ ownerEmail: owner, verified: true, plan: "scale", name: "seeding" })
    const inbox = yield* (yield* Inboxes).insert(organization.id, defaultPodId, { username: `imap${n}` }, { username: `imap${n}`, domain: "bench.example" })
    const inbound = yield* Inbound
    const target = { id: inbox.id, organization_id: inbox.organization_id, pod_id: inbox.pod_id, email: inbox.email }
    let done = 0
    yield* Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) =>
        inbound.deliver({ raw: benchMessage(i, inbox.email).raw, to: [inbox.email], inboxes: [target] }).pipe(
          Effect.tap(() =>
            Effect.sync(() => {
              done++
              if (done % 10_000 === 0) console.error(`imap seed: ${done.toLocaleString("en-US")} of ${n.toLocaleString("en-US")}`)
            })
          )
        ),
      { concurrency: 64, discard: true }
    )
    yield* sql`UPDATE organizations SET name = 'complete' WHERE id = ${organization.id}`
    yield* sql`ANALYZE messages`
    yield* sql`ANALYZE message_search`
    return {
      email: inbox.email,
      key: (yield* keys.issue(organization.id, { name: "bench" })).api_key,
      messages: n,
      seconds: Math.round((performance.now() - started) / 100) / 10
    } satisfies ImapSeeded
  })

if (import.meta.url === `file://${process.argv[1]}`) {
  const n = Number(process.argv[2] ?? "100000")
  NodeRuntime.runMain(
    seedImap(n).pipe(
      Effect.tap((s) => Effect.sync(() => process.stdout.write(`IMAP_SEEDED ${JSON.stringify(s)}\n`))),
      Effect.provide(Engine.layerConfig)
    )
  )
}
