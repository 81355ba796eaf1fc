/**
 * What both webhook references share: the signed POST they send (bench/reference-webhooks.ts, the bare one;
 * bench/reference-webhooks-durable.ts): Standard Webhooks headers (HMAC-SHA256 over
 * `id.timestamp.body`, keyed by the decoded `whsec_` secret) over keep-alive connections,
 * their envelopes, and their commands on stdin (one JSON a line: `template`, `backlog`,
 * `paced`; each answered on stdout).
 */
import { createHmac } from "node:crypto"
import { Agent, request } from "node:http"
import { createInterface } from "node:readline"

let template: Record<string, unknown> = {}

/**
 * An envelope of the template's shape with its own `event_id`, its `created_at` and every
 * member's `timestamp` the moment it is made (the receiver times it from the first
 * `timestamp`, and jsonb puts `thread` first).
 */
export const envelope = (id: string) => {
  const now = new Date().toISOString()
  const stamped: Record<string, unknown> = { ...template, event_id: id, created_at: now }
  for (const [key, value] of Object.entries(template)) {
    if (typeof value === "object" && value !== null && "timestamp" in value) stamped[key] = { ...value, timestamp: now }
  }
  return { id, now, body: JSON.stringify(stamped) }
}

/**
 * Answers the benchmark's commands: `template` (an envelope our server sent, copied by every
 * later one) with `TEMPLATE`; `backlog` and `paced` with `DONE {"start": epoch ms}`; then
 * says `REFERENCE_READY`.
 */
export const answerCommands = (run: {
  readonly backlog: (n: number) => Promise<number>
  readonly paced: (n: number, rate: number) => Promise<number>
}) => {
  createInterface({ input: process.stdin }).on("line", (line) => {
    const c = JSON.parse(line) as { cmd: string; body?: string; n?: number; rate?: number }
    if (c.cmd === "template") {
      template = JSON.parse(c.body!) as Record<string, unknown>
      process.stdout.write("TEMPLATE\n")
    } else {
      void (c.cmd === "backlog" ? run.backlog(c.n!) : run.paced(c.n!, c.rate!)).then((start) =>
        process.stdout.write(`DONE ${JSON.stringify({ start })}\n`)
      )
    }
  })
  process.stdout.write("REFERENCE_READY\n")
}

/**
 * `post(body, id)` to `url`: a request that fails on the wire (a kept-alive connection the
 * receiver closed while idle, which Node's server does after 5 s) is sent again at once, as
 * a sender that must not lose the event would: counted as lost, it left the benchmark
 * waiting for ever.
 */
export const signedPoster = (url: URL, whsec: string) => {
  const secret = Buffer.from(whsec.replace(/^whsec_/, ""), "base64")
  const agent = new Agent({ keepAlive: true })
  const attempt = (body: string, id: string) =>
    new Promise<boolean>((resolve) => {
      const timestamp = Math.floor(Date.now() / 1000).toString()
      const signature = `v1,${createHmac("sha256", secret).update(`${id}.${timestamp}.`).update(body).digest("base64")}`
      const req = request(url, {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body).toString(),
          "webhook-id": id,
          "webhook-timestamp": timestamp,
          "webhook-signature": signature
        }
      }, (res) => {
        res.resume()
        res.on("end", () => resolve((res.statusCode ?? 500) < 300))
        res.on("error", () => resolve(false))
      })
      req.on("error", () => resolve(false))
      req.end(body)
    })
  return async (body: string, id: string): Promise<void> => {
    while (!(await attempt(body, id)));
  }
}
