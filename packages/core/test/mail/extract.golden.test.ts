/**
 * Golden corpus of reply extraction: every `.eml` under testkit's fixtures/mail/replies goes
 * through the real parsing path (mailparser inside `parseRaw`, then `extractReply`) and its
 * `extracted_text` / `extracted_html` must equal the hand-written `.json` beside it. Text is
 * compared exactly apart from trailing spaces per line; HTML apart from whitespace (runs
 * collapsed, none between tags), which MIME line wrapping and client pretty-printing vary.
 *
 * Each `.json` names the client and the language of its case; the run prints the
 * exact-match rate per client and per language, and the floor is every case.
 */
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { parseRaw } from "../../src/mail/parse-core.ts"

const dir = fileURLToPath(new URL("../../../testkit/fixtures/mail/replies/", import.meta.url))
const names = readdirSync(dir).filter((f) => f.endsWith(".eml")).map((f) => f.slice(0, -4)).sort()

interface Expected {
  readonly client: string
  readonly language: string
  readonly extracted_text: string
  readonly extracted_html?: string
}

const normaliseText = (s: string | undefined): string | undefined =>
  s === undefined ? undefined : s.split("\n").map((line) => line.trimEnd()).join("\n")

const normaliseHtml = (s: string | undefined): string | undefined =>
  s === undefined ? undefined : s.replace(/\s+/g, " ").replace(/>\s+</g, "><").trim()

const matched = new Set<string>()
const expectations = new Map(names.map((name) => [name, JSON.parse(readFileSync(`${dir}${name}.json`, "utf8")) as Expected]))

/** "label: matched/all" per value of `key`, worst first. */
const rates = (key: "client" | "language"): string => {
  const groups = new Map<string, { all: number; ok: number }>()
  for (const [name, expected] of expectations) {
    const group = groups.get(expected[key]) ?? { all: 0, ok: 0 }
    group.all++
    if (matched.has(name)) group.ok++
    groups.set(expected[key], group)
  }
  return [...groups].sort(([a, x], [b, y]) => x.ok / x.all - y.ok / y.all || a.localeCompare(b))
    .map(([label, g]) => `  ${label}: ${g.ok}/${g.all} (${((100 * g.ok) / g.all).toFixed(0)}%)`).join("\n")
}

describe("reply extraction golden corpus", () => {
  it("has at least 200 cases in at least 15 languages, each naming its client and language", () => {
    expect(names.length).toBeGreaterThanOrEqual(200)
    for (const expected of expectations.values()) {
      expect(expected.client).toMatch(/\S/)
      expect(expected.language).toMatch(/\S/)
    }
    expect(new Set([...expectations.values()].map((e) => e.language)).size).toBeGreaterThanOrEqual(15)
  })

  for (const name of names) {
    it(name, async () => {
      const expected = expectations.get(name)!
      const outcome = await parseRaw(new Uint8Array(readFileSync(`${dir}${name}.eml`)))
      if (!outcome.ok) throw new Error(`${name} did not parse: ${outcome.message}`)
      const message = outcome.result.message
      expect(normaliseText(message.extracted_text)).toBe(normaliseText(expected.extracted_text))
      expect(normaliseHtml(message.extracted_html)).toBe(normaliseHtml(expected.extracted_html))
      matched.add(name)
    })
  }

  // Runs after the cases (vitest keeps declaration order within a file): the floor is 100%.
  it("matches every case of the corpus", () => {
    expect(matched.size).toBe(names.length)
  })

  afterAll(() => {
    const rate = names.length === 0 ? 0 : (100 * matched.size) / names.length
    console.log(
      `reply extraction: ${matched.size}/${names.length} cases match exactly (${rate.toFixed(1)}%)\n` +
        `per client:\n${rates("client")}\nper language:\n${rates("language")}`
    )
  })
})
