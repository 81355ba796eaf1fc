/**
 * The bare reference of the webhook benchmark (bench/webhooks.ts), in its own process as
 * our server is: a plain Node loop that signs envelopes the Standard Webhooks way
 * (HMAC-SHA256 over `id.timestamp.body`, keyed by the decoded `whsec_` secret) and POSTs
 * them to REF_URL over keep-alive connections, REF_CONCURRENCY at a time (our per-endpoint
 * limit). It stores nothing and retries nothing: the work a delivery cannot avoid.
 *
 * Commands on stdin, one JSON a line:
 * - `{"cmd":"template","body":"..."}`: an envelope our server sent, whose shape every later
 *   body copies (with its own `event_id` and `created_at`);
 * - `{"cmd":"backlog","n":N}`: N envelopes made now, sent as fast as the concurrency
 *   allows; answers `DONE {"start": epoch ms}`;
 * - `{"cmd":"paced","n":N,"rate":R}`: an envelope made every 1/R s (its `created_at` and its members' `timestamp` the
 *   moment it is made) and queued for the senders; answers `DONE {"start": epoch ms}`.
 */
import { answerCommands, envelope, signedPoster } from "./reference-post.ts"

const url = new URL(process.env["REF_URL"]!)
const concurrency = Number(process.env["REF_CONCURRENCY"] ?? "8")
const post = signedPoster(url, process.env["REF_SECRET"]!)
let serial = 0
const fresh = () => envelope(`evt_ref${serial++}`)

/** Senders taking envelopes from `next` until it answers undefined. */
const send = async (next: () => Promise<{ id: string; body: string } | undefined>) => {
  const sender = async () => {
    for (let e = await next(); e !== undefined; e = await next()) await post(e.body, e.id)
  }
  await Promise.all(Array.from({ length: concurrency }, sender))
}

const backlog = async (n: number) => {
  const start = Date.now()
  const made = Array.from({ length: n }, fresh)
  let i = 0
  await send(async () => made[i++])
  return start
}

const paced = async (n: number, rate: number) => {
  const start = Date.now()
  const queue: Array<{ id: string; body: string }> = []
  const waiting: Array<(e: { id: string; body: string } | undefined) => void> = []
  let made = 0
  const give = (e: { id: string; body: string } | undefined) => {
    const w = waiting.shift()
    if (w !== undefined) w(e)
    else if (e !== undefined) queue.push(e)
  }
  const tick = () => {
    while (made < n && Date.now() >= start + (made * 1000) / rate) {
      made++
      give(fresh())
    }
    if (made < n) setTimeout(tick, Math.max(0, start + (made * 1000) / rate - Date.now()))
    else while (waiting.length > 0) give(undefined)
  }
  tick()
  await send(() =>
    queue.length > 0 ? Promise.resolve(queue.shift()) : made >= n ? Promise.resolve(undefined) : new Promise((r) => waiting.push(r))
  )
  return start
}

answerCommands({ backlog, paced })
