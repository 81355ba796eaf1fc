import fc from "fast-check"
import { createRequire } from "node:module"
import { describe, expect, it } from "vitest"
import { decodeQuotedPrintable } from "../../src/mail/parse-core.ts"

// libqp is mailsplit's dependency, not ours: reach it the way mailsplit does
const mailsplit = createRequire(createRequire(import.meta.url).resolve("mailparser")).resolve("@zone-eu/mailsplit")
const libqp = createRequire(mailsplit)("libqp") as { decode: (input: Buffer) => Buffer }

const ours = (input: Buffer): Buffer => decodeQuotedPrintable(Buffer.from(input))

describe("decodeQuotedPrintable", () => {
  it("gives libqp's bytes on the cases its rules single out", () => {
    for (const input of [
      "", "=", "==", "=4", "=41", "==41", "=4G", "=g1", "=fF", "abc=\r\ndef", "abc=\ndef", "abc=\r", "abc= \r\nx", "a \t \r\nb",
      "a \t", "a \tb", "=\t", "= =\n", " =\n\n", "=\r=\n=\r\n", "caf=C3=A9 \n", "x=\r\n=41=\n", "\xff=ff\x80", "=3D=3d", "= 41"
    ]) {
      const bytes = Buffer.from(input, "latin1")
      expect([...ours(bytes)], JSON.stringify(input)).toEqual([...libqp.decode(bytes)])
    }
  })

  it("gives libqp's bytes on generated input", () => {
    const piece = fc.constantFrom("=", " ", "\t", "\r", "\n", "\r\n", "A", "f", "3", "D", "g", "x", "\x80", "\xff", "=3D", "=0A", "=\r\n", "=\n")
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const bytes = Buffer.from(pieces.join(""), "latin1")
        expect([...ours(bytes)]).toEqual([...libqp.decode(bytes)])
      }),
      { numRuns: 3000 }
    )
  })

  it("keeps its input's bytes when there is nothing to decode", () => {
    const bytes = Buffer.from("plain text, no escapes", "latin1")
    expect(ours(bytes).toString("latin1")).toBe("plain text, no escapes")
  })
})
