/**
 * Bytes answered as a download: the content type, the size when known, extra headers
 * (Content-Disposition and the like), and the bytes as a stream, so no adapter ever holds a
 * whole attachment or message in memory. Operations with a download output return one.
 */
import type { Stream } from "effect"

export interface Download {
  readonly contentType: string
  readonly size?: number
  /** Extra response headers (Content-Disposition and the like). */
  readonly headers?: Readonly<Record<string, string>>
  readonly body: Stream.Stream<Uint8Array>
}
