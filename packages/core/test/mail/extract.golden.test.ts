/**
 * Golden corpus of reply extraction: every `.eml` under testkit's fixtures/mail/replies goes
 * through the real parsing path (mailparser inside `parseRaw`, then `extractReply`) and its
 * `extracted_text` / `extracted_html` must equal the hand-written `.json` beside it. Text is
 * compared exactly apart from trailing spaces per line; HTML apart from whitespace (runs
 * collapsed, none between tags), which MIME line wrapping and client pretty-printing vary.
 */
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { parseRaw } from "../../src/mail/parse-core.ts"

const dir = fileURLToPath(new URL("../../../testkit/fixtures/mail/replies/", import.meta.url))
const names = readdirSync(dir).filter((f) => f.endsWith(".eml")).map((f) => f.slice(0, -4)).sort()

interface Expected {
  readonly extracted_text: string
  readonly extracted_html?: string
}

const normaliseText = (s: string | undefined): string | undefined =>
  s === undefined ? undefined : s.split("\n").map((line) => line.trimEnd()).join("\n")

const normaliseHtml = (s: string | undefined): string | undefined =>
  s === undefined ? undefined : s.replace(/\s+/g, " ").replace(/>\s+</g, "><").trim()

const matched: Array<string> = []

describe("reply extraction golden corpus", () => {
  it("has at least 60 cases, each with its expected json", () => {
    expect(names.length).toBeGreaterThanOrEqual(60)
    for (const name of names) expect(readdirSync(dir)).toContain(`${name}.json`)
  })

  for (const name of names) {
    it(name, async () => {
      const expected = JSON.parse(readFileSync(`${dir}${name}.json`, "utf8")) as Expected
      const outcome = await parseRaw(new Uint8Array(readFileSync(`${dir}${name}.eml`)))
      if (!outcome.ok) throw new Error(`${name} did not parse: ${outcome.message}`)
      const message = outcome.result.message
      expect(normaliseText(message.extracted_text)).toBe(normaliseText(expected.extracted_text))
      expect(normaliseHtml(message.extracted_html)).toBe(normaliseHtml(expected.extracted_html))
      matched.push(name)
    })
  }

  // Runs after the cases (vitest keeps declaration order within a file): the floor is 100%.
  it("matches every case of the corpus", () => {
    expect(matched.length).toBe(names.length)
  })

  afterAll(() => {
    const rate = names.length === 0 ? 0 : (100 * matched.length) / names.length
    console.log(`reply extraction: ${matched.length}/${names.length} cases match exactly (${rate.toFixed(1)}%)`)
  })
})
