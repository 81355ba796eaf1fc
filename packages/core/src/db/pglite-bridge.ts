/**
 * A wire-protocol bridge from @effect/sql-pg to an in-process PGlite.
 *
 * The driver speaks the PostgreSQL protocol over a Duplex; we hand it one end of a duplex
 * pair and feed each framed message from the other end to PGlite. PGlite is a single
 * session, so the client must be configured with `maxConnections: 1`; messages are run one
 * at a time, in order. Replies are copied (`Buffer.from`) because PGlite reuses the memory
 * behind `onRawData`, and a late read would otherwise see the next reply's bytes.
 */
import type { PGlite } from "@electric-sql/pglite"
import { type Duplex, duplexPair } from "node:stream"

const SSL_REQUEST_CODE = 80877103
const TERMINATE = 0x58

export const pgliteStream = (db: PGlite) => (): Duplex => {
  const [client, server] = duplexPair()
  let buffered: Buffer = Buffer.alloc(0)
  let started = false
  let chain: Promise<unknown> = Promise.resolve()
  const run = (message: Uint8Array) => {
    chain = chain
      .then(() =>
        db.runExclusive(() =>
          db.execProtocolRawStream(message, { onRawData: (data) => void server.write(Buffer.from(data)) })
        )
      )
      .catch((error: Error) => server.destroy(error))
  }
  server.on("data", (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
    for (;;) {
      if (!started) {
        // Startup and SSLRequest messages carry no type byte.
        if (buffered.length < 8) return
        const length = buffered.readInt32BE(0)
        if (length === 8 && buffered.readInt32BE(4) === SSL_REQUEST_CODE) {
          buffered = buffered.subarray(8)
          server.write("N")
          continue
        }
        if (buffered.length < length) return
        run(Buffer.from(buffered.subarray(0, length)))
        buffered = buffered.subarray(length)
        started = true
        continue
      }
      if (buffered.length < 5) return
      const length = 1 + buffered.readInt32BE(1)
      if (buffered.length < length) return
      const message = Buffer.from(buffered.subarray(0, length))
      buffered = buffered.subarray(length)
      // Terminate closes this stream only; the PGlite instance outlives the connection.
      if (message[0] === TERMINATE) server.end()
      else run(message)
    }
  })
  return client
}
