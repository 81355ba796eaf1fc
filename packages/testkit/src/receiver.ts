/**
 * A webhook receiver on a loopback port: records every request (headers and raw body) and
 * answers with the status a test chooses (a number, or a function of the request's
 * ordinal; `"hang"` never answers, for timeouts). Closed with its scope.
 */
import { Effect } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"

export interface ReceivedRequest {
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/**
 * Whether `request` is signed with `secret` the Standard Webhooks way, as the
 * `standardwebhooks` package checks it (its timestamp against the wall clock).
 */
export const signedWith = (secret: string, request: ReceivedRequest): boolean => {
  try {
    new Webhook(secret).verify(request.body, request.headers as Record<string, string>)
    return true
  } catch {
    return false
  }
}

export type Answer = number | "hang"

export interface Receiver {
  readonly url: string
  readonly received: Array<ReceivedRequest>
  /** The answer to the n-th request (0-based). */
  answer: (n: number) => Answer
}

export const webhookReceiver = (answer: (n: number) => Answer = () => 200) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Receiver & { close: () => Promise<void> }>((resolve) => {
        const received: Array<ReceivedRequest> = []
        const state = { answer }
        const server = createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", () => {
            const n = received.length
            received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") })
            const status = state.answer(n)
            if (status === "hang") return
            res.writeHead(status, { "content-type": "text/plain" }).end("ok")
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resolve({
            url: `http://127.0.0.1:${port}/hook`,
            received,
            get answer() {
              return state.answer
            },
            set answer(f) {
              state.answer = f
            },
            close: () =>
              new Promise<void>((done) => {
                server.closeAllConnections()
                server.close(() => done())
              })
          })
        })
      })
    ),
    (r) => Effect.promise(() => r.close())
  )
