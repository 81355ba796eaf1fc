/**
 * Open tracking (spec: Events `message.opened`; send rule `track_opens`): a message sent
 * with `track_opens` carries a 1x1 image at `INBOX_PUBLIC_URL/t/o/<open_token>.gif`
 * (composed at send time, mail/compose.ts). Each fetch of it counts an open; the first
 * records `message.opened` once, with `open: { inbox_id, thread_id, message_id, timestamp,
 * open_count, via_proxy }`, `message` (summary, no bodies) and `thread`. `via_proxy` is
 * true when the fetch came from a known image proxy (Google's, Apple's, Yahoo's,
 * Outlook's), which fetch on delivery or on the reader's behalf, so such an open says less
 * about a person reading. An unknown token is answered with the same image (a tracker must
 * not tell a prober which tokens exist). With INBOX_OPEN_TRACKING=off nothing is counted.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { MessageRow, ThreadRow, toSummary, toThreadSummary } from "../messages/model.ts"
import { Settings } from "../settings/Settings.ts"
import { decodeRows } from "../shared/sql.ts"
import { iso, now } from "../shared/time.ts"
import { Events } from "./Events.ts"

/** The 1x1 transparent GIF. */
export const PIXEL = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64")

/** User agents of image proxies that fetch images for mail readers. */
const PROXIES = [/GoogleImageProxy/i, /ggpht\.com/i, /YahooMailProxy/i, /Apple.*Mail.*Privacy/i, /Outlook-iOS|ms-office|Microsoft Office/i]

export const isImageProxy = (userAgent: string | undefined): boolean =>
  userAgent !== undefined && PROXIES.some((p) => p.test(userAgent))

const Counted = Schema.Struct({ open_count: Schema.Number })

export class Opens extends Context.Service<Opens, {
  /** Counts one fetch of the pixel named by `file` (`<token>.gif`). */
  open(file: string, userAgent: string | undefined): Effect.Effect<void>
}>()("inbox/Opens") {
  static readonly layerNoDeps = Layer.effect(Opens, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* Settings
    const events = yield* Events
    return Opens.of({
      open: Effect.fn("Opens.open")(function*(file, userAgent) {
        if (!settings.openTracking) return
        const token = file.replace(/\.gif$/i, "")
        if (!/^[0-9a-f]{8,64}$/.test(token)) return
        yield* sql.withTransaction(Effect.gen(function*() {
          const messages = yield* sql`SELECT * FROM messages WHERE open_token = ${token} AND direction = 'sent'`.pipe(decodeRows(MessageRow))
          const message = messages[0]
          if (message === undefined) return
          const at = yield* now
          const proxy = isImageProxy(userAgent)
          const counted = yield* sql`INSERT INTO message_opens (message_id, open_count, via_proxy, first_opened_at, last_opened_at)
            VALUES (${message.id}, 1, ${proxy}, ${at}, ${at})
            ON CONFLICT (message_id) DO UPDATE SET open_count = message_opens.open_count + 1, last_opened_at = EXCLUDED.last_opened_at
            RETURNING open_count`.pipe(decodeRows(Counted))
          // Only the first open (the row just made) records the event: later opens count without a second one.
          if (counted[0]?.open_count !== 1) return
          const threads = yield* sql`SELECT * FROM threads WHERE id = ${message.thread_id}`.pipe(decodeRows(ThreadRow))
          const thread = threads[0]
          if (thread === undefined) return
          yield* events.record({
            organizationId: message.organization_id,
            podId: message.pod_id,
            inboxId: message.inbox_id,
            type: "message.opened",
            payload: {
              message: toSummary(message),
              thread: toThreadSummary(thread),
              open: {
                inbox_id: message.inbox_id,
                thread_id: message.thread_id,
                message_id: message.id,
                timestamp: iso(at),
                open_count: 1,
                via_proxy: proxy
              }
            }
          })
        })).pipe(Effect.orDie)
      })
    })
  }))

  /** With the services it uses (Events); the ports are the caller's. */
  static readonly layer = Opens.layerNoDeps.pipe(Layer.provide(Events.layer))
}
