/**
 * The WebSocket heartbeat of the engine's Node server (node.ts): an idle connection is
 * pinged, a client that answers stays connected, a client that never answers (a dead or
 * half-open peer) is closed. The upgrade is done by a `ws` server as Effect's adapter does;
 * the interval is shortened to 100 ms so the file stays fast.
 */
import { makeNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import type { AddressInfo } from "node:net"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import WebSocket, { WebSocketServer } from "ws"

const INTERVAL = 100
const server = makeNodeServer({ ...NODE_SERVER_DEFAULTS, pingIntervalMs: INTERVAL }, () => "req_test")
const wss = new WebSocketServer({ noServer: true })
server.on("upgrade", (request, socket, head) => wss.handleUpgrade(request, socket, head, () => undefined))
let url = ""

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  wss.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const open = (autoPong: boolean) =>
  new Promise<{ ws: WebSocket; pings: () => number; closed: Promise<number> }>((resolve, reject) => {
    const ws = new WebSocket(url, { autoPong })
    let pings = 0
    ws.on("ping", () => pings++)
    const closed = new Promise<number>((done) => ws.on("close", (code) => done(code)))
    ws.on("open", () => resolve({ ws, pings: () => pings, closed }))
    ws.on("error", reject)
  })

describe("WebSocket heartbeat", () => {
  it("an idle connection is pinged and, answering with pongs, stays connected", async () => {
    const client = await open(true)
    await new Promise((r) => setTimeout(r, INTERVAL * 5))
    assert.isAtLeast(client.pings(), 2)
    assert.strictEqual(client.ws.readyState, WebSocket.OPEN)
    client.ws.close()
  })

  it("a connection that never answers a ping is closed by the server", async () => {
    const client = await open(false)
    const code = await client.closed
    assert.isAtLeast(client.pings(), 1)
    // Destroyed, not closed with a frame: a dead peer could not read one.
    assert.strictEqual(code, 1006)
  })
})
