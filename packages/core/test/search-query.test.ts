/**
 * The search query language's operators (docs/search.md): `is:unread` and `is:read` are the
 * label `unread` and its absence, and any other `name:` is refused with a message that names
 * it, rather than searched for as text (which quietly found nothing).
 */
import { assert, describe, it } from "@effect/vitest"
import { parseQuery } from "../src/search/query.ts"

const nodeOf = (q: string) => {
  const parsed = parseQuery(q)
  if (parsed._tag === "Problem") throw new Error(`${q}: ${parsed.error.message}`)
  return parsed.node
}

const problemOf = (q: string) => {
  const parsed = parseQuery(q)
  if (parsed._tag === "Ok") throw new Error(`${q} parsed`)
  assert.deepStrictEqual(parsed.error.errors.map((e) => e.path), [["q"]])
  return parsed.error.message
}

describe("search query language", () => {
  it("is:unread is the label unread, is:read its absence, -is:read the label again", () => {
    assert.deepStrictEqual(nodeOf("is:unread"), { _tag: "Label", label: "unread" })
    assert.deepStrictEqual(nodeOf("is:READ"), { _tag: "Not", node: { _tag: "Label", label: "unread" } })
    assert.deepStrictEqual(nodeOf("-is:read"), { _tag: "Not", node: { _tag: "Not", node: { _tag: "Label", label: "unread" } } })
    const both = nodeOf("invoice is:unread")
    assert.strictEqual(both._tag, "And")
  })

  it("an unknown is: value is refused naming the values it knows", () => {
    assert.include(problemOf("is:starred"), "is:unread and is:read, not is:starred")
  })

  it("an unknown operator is refused with its name and the known ones; quoted, or a link, it is text", () => {
    const said = problemOf("invoice in:inbox")
    assert.include(said, "in: is not an operator")
    assert.include(said, "is:unread")
    assert.include(problemOf("frm:ann"), "frm:")
    assert.strictEqual(nodeOf("\"in:inbox\"")._tag, "Text")
    assert.strictEqual(nodeOf("https://example.org/a")._tag, "Text")
    // Not a name: a time of day stays a word.
    assert.strictEqual(nodeOf("10:30")._tag, "Text")
  })
})
