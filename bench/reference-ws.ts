/**
 * The bare reference of the WebSocket fan-out benchmark (bench/webhooks.ts), in its own
 * process as our server is: a `ws` server on REF_PORT that answers a subscribe frame with
 * `{"type":"subscribed"}` and, for each `{"cmd":"publish","body":...}` on stdin, stamps the
 * envelope's `created_at` now, serialises it once and sends it to every client. No
 * authentication, filtering or database: the work a broadcast cannot avoid.
 * `{"cmd":"memory"}` answers `MEMORY {rss}` after a garbage collection (--expose-gc).
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
    return void process.stdout.write(`MEMORY ${JSON.stringify({ rss: process.memoryUsage().rss })}\n`)
  }
  const frame = JSON.stringify({ ...JSON.parse(c.body!) as Record<string, unknown>, created_at: new Date().toISOString() })
  for (const ws of wss.clients) ws.send(frame)
  process.stdout.write("PUBLISHED\n")
})
