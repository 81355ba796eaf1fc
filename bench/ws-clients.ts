/**
 * The WebSocket benchmark's subscribers (bench/webhooks.ts), in their own process so the
 * server's memory is its own: WS_COUNT connections to WS_URL with the `ws` client, each
 * sending WS_SUBSCRIBE (when set) and waiting for its answer, 200 opening at a time. Prints
 * `READY {connected}`; then for each `{"cmd":"collect","n":N}` on stdin waits until every
 * connection has had N more event frames (or no frame came for 15 s) and prints
 * `FRAMES {received, latencies, lastByEvent}`: each frame's arrival minus its envelope's
 * `created_at`, in ms, and per event the latest of those (when its last subscriber had it).
 * The envelope is parsed once per event (all subscribers get the same one), so
 * the subscribers' own work stays small beside the server's.
 */
import { createInterface } from "node:readline"
import WebSocket from "ws"

const url = process.env["WS_URL"]!
const count = Number(process.env["WS_COUNT"] ?? "10000")
const subscribe = process.env["WS_SUBSCRIBE"]
const OPENING = 200

const createdOf = new Map<string, number>()
let frames: Array<{ at: number; text: string }> = []
let sample: string | undefined

const open = () =>
  new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false })
    ws.once("error", reject)
    // Refused by a cap (1013, 4029) or closed before answering: say so rather than wait.
    ws.once("close", (code, reason) => reject(new Error(`closed with ${code} ${String(reason)}`)))
    ws.once("open", () => {
      if (subscribe === undefined) return resolve(ws)
      ws.send(subscribe)
      ws.once("message", () => resolve(ws))
    })
    ws.on("message", (data: Buffer) => {
      const at = Date.now()
      const text = data.toString("utf8")
      if (!text.startsWith('{"type":"event"')) return
      // The envelope's own created_at comes before the payload's.
      frames.push({ at, text: text.slice(0, 400) })
      sample ??= text
    })
  })

const main = async () => {
  const sockets: Array<WebSocket> = []
  for (let i = 0; i < count; i += OPENING) {
    sockets.push(...await Promise.all(Array.from({ length: Math.min(OPENING, count - i) }, open)))
  }
  process.stdout.write(`READY ${JSON.stringify({ connected: sockets.length })}\n`)
  createInterface({ input: process.stdin }).on("line", (line) => {
    const c = JSON.parse(line) as { cmd: string; n?: number }
    if (c.cmd === "sample") return void process.stdout.write(`SAMPLE ${JSON.stringify({ text: sample })}\n`)
    const want = sockets.length * (c.n ?? 1)
    let seen = frames.length
    let progressAt = Date.now()
    const check = () => {
      if (frames.length !== seen) {
        seen = frames.length
        progressAt = Date.now()
      }
      if (frames.length < want && Date.now() - progressAt < 15_000) return void setTimeout(check, 20)
      const last = new Map<string, number>()
      const latencies = frames.map(({ at, text }) => {
        const created = /"created_at":"([^"]+)"/.exec(text)?.[1] ?? ""
        let t = createdOf.get(created)
        if (t === undefined) createdOf.set(created, t = Date.parse(created))
        last.set(created, Math.max(last.get(created) ?? 0, at - t))
        return at - t
      })
      frames = []
      process.stdout.write(`FRAMES ${JSON.stringify({ received: latencies.length, latencies, lastByEvent: [...last.values()] })}\n`)
    }
    check()
  })
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
