/**
 * The durable reference of the webhook benchmark (bench/webhooks.ts, issue 29): what the
 * least a webhook sender that loses nothing must do, written plainly with `pg`, in its own
 * process as our server is. Each event is committed with its delivery row in one
 * transaction that also sends a NOTIFY; a worker LISTENs, claims pending rows with
 * `FOR UPDATE SKIP LOCKED` (so several workers, or processes, never send one twice), signs
 * each envelope the Standard Webhooks way, POSTs it over keep-alive connections
 * REF_CONCURRENCY at a time (our per-endpoint limit) and marks it delivered. It has no
 * retries with backoff, no per-endpoint bookkeeping and no fan-out to several webhooks: a
 * floor for a durable queue, beside the bare reference (bench/reference-webhooks.ts) that
 * stores nothing.
 *
 * Env: REF_URL, REF_SECRET, REF_CONCURRENCY, REF_DATABASE_URL (its tables, `ref_*`, are
 * made afresh in that database). Commands on stdin, as the bare reference's:
 * - `{"cmd":"template","body":"..."}`: an envelope our server sent, copied by every later one;
 * - `{"cmd":"backlog","n":N}`: N events committed with the worker stopped, then the worker
 *   started; answers `DONE {"start": epoch ms}` (the worker's start);
 * - `{"cmd":"paced","n":N,"rate":R}`: an event made and committed every 1/R s, the worker
 *   running; answers `DONE {"start": epoch ms}` once all are committed.
 */
import { answerCommands, envelope, signedPoster } from "./reference-post.ts"
import pg from "pg"

const url = new URL(process.env["REF_URL"]!)
const concurrency = Number(process.env["REF_CONCURRENCY"] ?? "8")
const post = signedPoster(url, process.env["REF_SECRET"]!)
const pool = new pg.Pool({ connectionString: process.env["REF_DATABASE_URL"], max: 6 })

await pool.query(`
  DROP TABLE IF EXISTS ref_deliveries, ref_events;
  CREATE TABLE ref_events (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL, body jsonb NOT NULL);
  CREATE TABLE ref_deliveries (
    id bigserial PRIMARY KEY,
    event_id bigint NOT NULL REFERENCES ref_events (id),
    state text NOT NULL DEFAULT 'pending',
    attempts int NOT NULL DEFAULT 0,
    delivered_at timestamptz
  );
  CREATE INDEX ref_deliveries_pending ON ref_deliveries (id) WHERE state = 'pending';
`)

let serial = 0
const fresh = () => envelope(`evt_dur${serial++}`)

/** One event and its delivery row, committed together, with the worker's wake-up. */
const record = async () => {
  const e = fresh()
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    const { rows } = await client.query<{ id: string }>("INSERT INTO ref_events (created_at, body) VALUES ($1, $2) RETURNING id", [e.now, e.body])
    await client.query("INSERT INTO ref_deliveries (event_id) VALUES ($1)", [rows[0]!.id])
    await client.query("NOTIFY ref_deliveries")
    await client.query("COMMIT")
  } catch (error) {
    await client.query("ROLLBACK")
    throw error
  } finally {
    client.release()
  }
}

let running = false
let stopped: Promise<unknown> = Promise.resolve()
const sleepers = new Set<() => void>()
const wake = () => {
  for (const s of sleepers) s()
  sleepers.clear()
}
const listener = new pg.Client({ connectionString: process.env["REF_DATABASE_URL"] })
await listener.connect()
await listener.query("LISTEN ref_deliveries")
listener.on("notification", wake)

const claim = async (limit: number) =>
  (await pool.query<{ id: string; event_id: string; body: string }>(
    `WITH claimed AS (
       UPDATE ref_deliveries SET state = 'sending', attempts = attempts + 1
       WHERE id IN (SELECT id FROM ref_deliveries WHERE state = 'pending' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING id, event_id)
     SELECT c.id, c.event_id, e.body::text AS body FROM claimed c JOIN ref_events e ON e.id = c.event_id ORDER BY c.id`,
    [limit]
  )).rows

// At most `concurrency` POSTs in flight; each delivery is marked delivered once answered.
let inFlight = 0
const slotFreed = new Set<() => void>()
const deliver = async (r: { id: string; body: string }) => {
  inFlight++
  try {
    await post(r.body, `msg_dur${r.id}`)
    await pool.query("UPDATE ref_deliveries SET state = 'delivered', delivered_at = now() WHERE id = $1", [r.id])
  } finally {
    inFlight--
    for (const f of slotFreed) f()
    slotFreed.clear()
  }
}
const freeSlot = () => inFlight < concurrency ? Promise.resolve() : new Promise<void>((r) => slotFreed.add(r))

/** Claims what is pending, as many rows as there are free slots, until stopped; sleeps until a NOTIFY (or a second, for a lost one). */
const worker = async () => {
  while (running) {
    await freeSlot()
    const rows = await claim(concurrency - inFlight)
    if (rows.length > 0) {
      for (const r of rows) void deliver(r)
      continue
    }
    if (!running) break
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, 1000)
      sleepers.add(done)
    })
  }
  while (inFlight > 0) await new Promise<void>((r) => slotFreed.add(r))
}

const start = () => {
  running = true
  stopped = worker()
}

const backlog = async (n: number) => {
  running = false
  wake()
  await stopped
  for (let done = 0; done < n; done += 500) {
    const count = Math.min(500, n - done)
    const made = Array.from({ length: count }, fresh)
    await pool.query(
      `WITH e AS (INSERT INTO ref_events (created_at, body) SELECT * FROM unnest($1::timestamptz[], $2::jsonb[]) RETURNING id)
       INSERT INTO ref_deliveries (event_id) SELECT id FROM e`,
      [made.map((m) => m.now), made.map((m) => m.body)]
    )
  }
  const at = Date.now()
  start()
  return at
}

const paced = async (n: number, rate: number) => {
  if (!running) start()
  const begun = Date.now()
  const inFlight: Array<Promise<void>> = []
  for (let made = 0; made < n; made++) {
    const due = begun + (made * 1000) / rate
    const wait = due - Date.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    inFlight.push(record())
  }
  await Promise.all(inFlight)
  return begun
}

answerCommands({ backlog, paced })
