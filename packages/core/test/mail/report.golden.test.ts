/**
 * Golden corpus of delivery reports: every `.eml` under testkit's fixtures/mail/reports goes
 * through `parseDeliveryReport`, and what it reports must equal the hand-written `.json`
 * beside it: an RFC 3464 hard bounce (5.1.1) and a delay (4.2.2), an RFC 5965 abuse report,
 * and a report of another kind (a read receipt, `null`: ordinary mail).
 */
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { parseDeliveryReport } from "../../src/mail/report.ts"

const dir = fileURLToPath(new URL("../../../testkit/fixtures/mail/reports/", import.meta.url))
const names = readdirSync(dir).filter((f) => f.endsWith(".eml")).map((f) => f.slice(0, -4)).sort()

describe("delivery reports read from mail", () => {
  it("the corpus has a hard bounce, a soft bounce, a complaint and a report that is neither", () => {
    expect(names).toEqual(["complaint", "hard-bounce", "read-receipt", "soft-bounce"])
  })

  for (const name of names) {
    it(`${name}.eml reports what ${name}.json says`, () => {
      const raw = new Uint8Array(readFileSync(`${dir}${name}.eml`))
      const expected: unknown = JSON.parse(readFileSync(`${dir}${name}.json`, "utf8"))
      expect(parseDeliveryReport(raw) ?? null).toEqual(expected)
    })
  }

  it("ordinary mail, and a report whose delivery-status names no recipient, are not reports", () => {
    expect(parseDeliveryReport(Buffer.from("From: a@x.example\r\nTo: b@y.example\r\nSubject: hi\r\n\r\nhello\r\n"))).toBeUndefined()
    const empty = "Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n--b--\r\n"
    expect(parseDeliveryReport(Buffer.from(empty))).toBeUndefined()
  })

  it("reads the report from the message's own header, whatever its line breaks, and not from a body that quotes one", () => {
    const raw = readFileSync(`${dir}hard-bounce.eml`, "latin1")
    const expected: unknown = JSON.parse(readFileSync(`${dir}hard-bounce.json`, "utf8"))
    expect(parseDeliveryReport(Buffer.from(raw.replace(/\r\n/g, "\n"), "latin1")) ?? null).toEqual(expected)
    const quoted = `From: a@x.example\r\nSubject: fwd\r\n\r\n${raw}`
    expect(parseDeliveryReport(Buffer.from(quoted, "latin1"))).toBeUndefined()
    // a view into a larger buffer reads only its own bytes
    const framed = Buffer.from(`xxxx${raw}yyyy`, "latin1")
    expect(parseDeliveryReport(framed.subarray(4, framed.length - 4)) ?? null).toEqual(expected)
  })
})
