/**
 * The bare reference of the WebSocket fan-out benchmark (bench/webhooks.ts), in its own
 * process as our server is: a `ws` server on REF_PORT that answers a subscribe frame with
 * `{"type":"subscribed"}` and, for each `{"cmd":"publish","body":...}` on stdin, stamps the
 * envelope's `created_at` now, serialises it once and sends it to every client;
 * `{"cmd":"paced","body":...,"n":N,"rate":R}` does that N times, R a second, each at its
 * time, and answers `PUBLISHED` after the last. No
 * authentication, filtering or database: the work a broadcast cannot avoid.
 * `{"cmd":"memory"}` answers `MEMORY {rss, heapUsed, ...}` after a garbage collection (--expose-gc).
 */
import { createInterface } from "node:readline"
import { WebSocketServer } from "ws"

const wss = new WebSocketServer({ port: Number(process.env["REF_PORT"]), host: "127.0.0.1", perMessageDeflate: false })
wss.on("connection", (ws) => ws.on("message", () => ws.send('{"type":"subscribed"}')))
wss.on("listening", () => process.stdout.write("REFERENCE_READY\n"))

createInterface({ input: process.stdin }).on("line", (line) => {
  const c = JSON.parse(line) as { cmd: string; body?: string }
  if (c.cmd === "memory") {
    ;(globalThis as { gc?: () => void }).gc?.()
    const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage()
    return void process.stdout.write(`MEMORY ${JSON.stringify({ rss, heapUsed, external, arrayBuffers })}\n`)
  }
  const envelope = JSON.parse(c.body!) as Record<string, unknown>
  const broadcast = () => {
    const frame = JSON.stringify({ ...envelope, created_at: new Date().toISOString() })
    for (const ws of wss.clients) ws.send(frame)
  }
  if (c.cmd === "publish") {
    broadcast()
    return void process.stdout.write("PUBLISHED\n")
  }
  const { n = 1, rate = 1 } = c as { n?: number; rate?: number }
  const start = Date.now()
  let sent = 0
  const next = () => {
    broadcast()
    if (++sent >= n) return void process.stdout.write("PUBLISHED\n")
    setTimeout(next, Math.max(0, start + (sent * 1000) / rate - Date.now()))
  }
  next()
})
