/**
 * The engine's Node server when its listener closes (node.ts, "Shutdown"), over real
 * sockets: an answer written after the close says `Connection: close`; a request that still
 * reaches the server on an open connection (here sent after the close, on a connection whose
 * answer under way had sent its keep-alive headers before it) is answered 503
 * service_unavailable with `Connection: close` and never served; the drain hook hears how many requests were under way. The whole
 * server on SIGTERM is packages/cli/test/shutdown.test.ts.
 */
import { makeNodeServer, NODE_SERVER_DEFAULTS } from "@inbox/http"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { type AddressInfo, connect } from "node:net"
import { afterEach, assert, describe, it } from "vitest"

interface Held {
  readonly url: string
  readonly response: ServerResponse
}

/** A server whose direct path holds `/hold*` requests for the test and serves the rest. */
const start = async () => {
  const held: Array<Held> = []
  const served: Array<string> = []
  const drains: Array<number> = []
  const direct = (request: IncomingMessage, response: ServerResponse) => {
    const url = request.url ?? ""
    if (url.startsWith("/hold")) held.push({ url, response })
    else {
      served.push(url)
      response.end("served")
    }
    return true
  }
  const server = makeNodeServer(NODE_SERVER_DEFAULTS, () => "req_test", direct, { onDrain: (n) => drains.push(n) })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, port: (server.address() as AddressInfo).port, held, served, drains }
}

/** Writes `data` on one connection; `answers` resolves with everything read once the server closes it. */
const talk = (port: number, data: string) => {
  const socket = connect(port, "127.0.0.1", () => socket.write(data))
  let raw = ""
  socket.on("data", (chunk: Buffer) => (raw += chunk.toString("latin1")))
  const answers = new Promise<string>((resolve) => socket.on("close", () => resolve(raw)))
  return { answers, send: (more: string) => new Promise<void>((resolve) => socket.write(more, () => resolve())) }
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10))
  assert.isTrue(check())
}

let server: Server | undefined
afterEach(() => {
  server?.closeAllConnections()
  server?.close()
})

describe("the Node server once its listener closes", () => {
  it("writes Connection: close on an answer under way, and the drain hook hears one request in flight", async () => {
    const s = await start()
    server = s.server
    const client = talk(s.port, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
    await until(() => s.held.length === 1)
    s.server.close()
    s.held[0]?.response.end("late")
    const raw = await client.answers
    assert.match(raw, /^HTTP\/1\.1 200 /)
    assert.match(raw, /\r\nConnection: close\r\n/i)
    assert.deepStrictEqual(s.drains, [1])
  })

  it("counts only the answers still under way after others finished in any order, and writes Connection: close on each", async () => {
    const s = await start()
    server = s.server
    const clients = ["/hold-a", "/hold-b", "/hold-c", "/hold-d"].map((path) => talk(s.port, `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`))
    await until(() => s.held.length === 4)
    const byUrl = new Map(s.held.map((h) => [h.url, h.response]))
    // The first and the third finish before the close; each leaves its place to another.
    for (const url of ["/hold-a", "/hold-c"]) {
      const response = byUrl.get(url)!
      await new Promise<void>((resolve) => {
        response.once("close", () => resolve())
        response.end("early")
      })
    }
    s.server.close()
    for (const url of ["/hold-b", "/hold-d"]) byUrl.get(url)!.end("late")
    const answers = await Promise.all([clients[1]!.answers, clients[3]!.answers])
    for (const raw of answers) assert.match(raw, /^HTTP\/1\.1 200 [^]*\r\nConnection: close\r\n[^]*late$/i)
    assert.deepStrictEqual(s.drains, [2])
  })

  it("answers a request that still arrives on an open connection 503 service_unavailable with Connection: close, and never serves it", async () => {
    const s = await start()
    server = s.server
    const client = talk(s.port, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
    await until(() => s.held.length === 1)
    const first = s.held[0]!.response
    first.writeHead(200, { "content-length": "2" })
    first.write("o")
    s.server.close()
    // The connection is kept alive (its answer said so before the close): the client sends its next request on it.
    await client.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
    await new Promise((r) => setTimeout(r, 50))
    first.end("k")
    const raw = await client.answers
    const [, second = ""] = raw.split(/(?=HTTP\/1\.1 )/)
    assert.match(raw, /^HTTP\/1\.1 200 [^]*\r\n\r\nok/)
    assert.match(second, /^HTTP\/1\.1 503 /)
    assert.match(second, /\r\nConnection: close\r\n/i)
    assert.match(second, /\r\nRetry-After: 1\r\n/i)
    assert.strictEqual((JSON.parse(second.slice(second.indexOf("\r\n\r\n") + 4)) as { code: string }).code, "service_unavailable")
    assert.deepStrictEqual(s.served, [])
  })
})
