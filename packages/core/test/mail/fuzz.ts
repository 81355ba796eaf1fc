/**
 * Fuzzing inputs for Mail.parse, shared by the property test (a few hundred cases) and
 * bench/fuzz-parse.ts (10,000+): generated messages and mutations of the real fixtures
 * (byte flips, truncation, duplicated headers, corrupted boundaries, spliced bytes).
 */
import fc from "fast-check"
import { fixture, fixtureNames } from "./fixtures.ts"

const seeds = fixtureNames.map((n) => fixture(n))

const headerName = fc.constantFrom("From", "To", "Cc", "Subject", "Message-ID", "In-Reply-To", "References", "Content-Type", "Content-Transfer-Encoding", "Content-Disposition", "Date", "X-Junk")
const headerValue = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.constantFrom("multipart/mixed; boundary=b", "multipart/alternative", "text/html; charset=x-bogus", "base64", "quoted-printable", "=?utf-8?b?////?=", "=?x?q?=ZZ?=", "<a@b> <c@d", "\"unterminated <x@y>", "attachment; filename*0*=utf-8''%FF%FE",
    // what PostgreSQL cannot hold: a lone surrogate (D8 00 in UTF-16), a NUL, raw and encoded
    "=?utf-16be?B?2AAAQQ==?=", "attachment; filename=\"=?utf-16be?B?2AAAQQ==?=\"", "\"A\u0000B\" <a@b>", "attachment; filename=\"a\u0000b\"", "=?utf-8?q?=00?="),
  fc.string({ unit: "binary", maxLength: 40 })
)
// bodies: random bytes, sometimes with a quoted-printable `=00` (a NUL once decoded) in them
const body = fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), fc.tuple(fc.string({ unit: "binary", maxLength: 150 }), fc.string({ maxLength: 150 })).map(([a, b]) => `${a}=00${b}`))
const part = fc.record({ headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 }), body })

/** A message assembled from random headers and parts, boundaries sometimes right, sometimes not. */
export const generated = fc.record({
  headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 10 }),
  boundary: fc.constantFrom("b", "b1", "", "--", "=_x"),
  parts: fc.array(part, { maxLength: 6 }),
  newline: fc.constantFrom("\r\n", "\n", "\r")
}).map(({ headers, boundary, parts, newline }) => {
  const head = headers.map(([k, v]) => `${k}: ${v}`).join(newline)
  const body = parts.map((p) => `--${boundary}${newline}${p.headers.map(([k, v]) => `${k}: ${v}`).join(newline)}${newline}${newline}${p.body}`).join(newline)
  return Buffer.from(`${head}${newline}Content-Type: multipart/mixed; boundary="${boundary}"${newline}${newline}${body}${newline}--${boundary}--`, "latin1")
})

const mutation = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), count: fc.integer({ min: 1, max: 20 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("duplicate-headers" as const), times: fc.integer({ min: 2, max: 50 }) }),
  fc.record({ kind: fc.constant("corrupt-boundary" as const), with: fc.constantFrom("", "x", "--", "\u0000", "sep--", "outer\r\n--outer") }),
  fc.record({ kind: fc.constant("splice" as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 64 }) })
)

const mutate = (seed: Uint8Array, m: typeof mutation extends fc.Arbitrary<infer M> ? M : never): Uint8Array => {
  const b = Buffer.from(seed)
  switch (m.kind) {
    case "flip": {
      const out = Buffer.from(b)
      for (let i = 0; i < m.count && out.length > 0; i++) out[(m.at + i * 7919) % out.length] = m.byte
      return out
    }
    case "truncate":
      return b.subarray(0, b.length === 0 ? 0 : m.at % b.length)
    case "duplicate-headers": {
      const end = b.indexOf("\n\n") === -1 ? b.length : b.indexOf("\n\n")
      const head = b.subarray(0, end).toString("latin1")
      return Buffer.concat([Buffer.from(Array(m.times).fill(head).join("\n"), "latin1"), b.subarray(end)])
    }
    case "corrupt-boundary": {
      const text = b.toString("latin1")
      const boundary = text.match(/boundary="?([^";\r\n]+)/i)?.[1]
      return boundary === undefined ? b : Buffer.from(text.split(boundary).join(m.with), "latin1")
    }
    case "splice": {
      const at = b.length === 0 ? 0 : m.at % b.length
      return Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)])
    }
  }
}

export const mutated = fc.tuple(fc.constantFrom(...seeds), mutation).map(([seed, m]) => new Uint8Array(mutate(seed, m)))

export const messages = fc.oneof(generated.map((b) => new Uint8Array(b)), mutated)
export { default as fc } from "fast-check"
