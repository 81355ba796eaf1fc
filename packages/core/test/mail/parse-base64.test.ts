import fc from "fast-check"
import { createRequire } from "node:module"
import { Readable } from "node:stream"
import { describe, expect, it } from "vitest"
import { decodeBase64 } from "../../src/mail/parse-core.ts"

// libbase64 is mailsplit's dependency, not ours: reach it the way mailsplit does
const mailsplit = createRequire(createRequire(import.meta.url).resolve("mailparser")).resolve("@zone-eu/mailsplit")
const libbase64 = createRequire(mailsplit)("libbase64") as { Decoder: new() => NodeJS.ReadWriteStream }

/** What mailsplit's decoder gives for a body written to it in one piece. */
const theirs = async (input: Buffer): Promise<Array<number>> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of Readable.from([input]).pipe(new libbase64.Decoder())) chunks.push(chunk as Buffer)
  return [...Buffer.concat(chunks)]
}

const ours = (input: Buffer): Array<number> => [...decodeBase64(Buffer.from(input))]

describe("decodeBase64", () => {
  it("gives libbase64's bytes on the cases its rules single out", async () => {
    for (
      const input of [
        "", "=", "YQ", "YQ=", "YQ==", "YWJj", "YW\r\nJj", "YW Jj\t", "YQ==\r\n", "YQ=\r\n=", "YQ==YWJj", "YQ==\r\nYWJj", "YW-j", "YW_j", "YW*j",
        "YW.j\r\n", "YW\xc1j", "\xe1\xe2\xe3\xe4", "Y\x00Q==", "====", "YWJj====ZA==", "-_-_", "YWJjZA==\r\n\r\n"
      ]
    ) {
      const bytes = Buffer.from(input, "latin1")
      expect(ours(bytes), JSON.stringify(input)).toEqual(await theirs(bytes))
    }
  })

  it("gives libbase64's bytes on generated input", async () => {
    const piece = fc.constantFrom("A", "Q", "z", "0", "9", "+", "/", "=", "==", "\r\n", "\n", " ", "\t", "-", "_", "*", ".", "\x00", "\x80", "\xc1", "\xff", "YWJj")
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 40 }), async (pieces) => {
        const bytes = Buffer.from(pieces.join(""), "latin1")
        expect(ours(bytes)).toEqual(await theirs(bytes))
      }),
      { numRuns: 3000 }
    )
  })

  it("decodes a body in 76-character lines to the bytes that were encoded", () => {
    const bytes = Buffer.from(Array.from({ length: 10_000 }, (_, i) => (i * 31) % 256))
    const body = Buffer.from(bytes.toString("base64").replace(/.{76}/g, "$&\r\n") + "\r\n", "latin1")
    expect(decodeBase64(body).equals(bytes)).toBe(true)
  })
})
