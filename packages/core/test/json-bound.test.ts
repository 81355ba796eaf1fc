import { assert, describe, it } from "@effect/vitest"
import { jsonBytesAtMost, jsonBytesAtMostByLength } from "../src/shared/json.ts"

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value))

describe("jsonBytesAtMost (shared/json.ts): an event body's size without its text", () => {
  it("is never below the UTF-8 bytes JSON.stringify gives, whatever the characters", () => {
    const values: ReadonlyArray<unknown> = [
      "",
      "plain ascii",
      "\u0000\u0001\u001f\"\\\n\t",
      "é".repeat(1000),
      "漢字".repeat(500),
      "😀".repeat(300),
      "\ud800 lone \udfff surrogates",
      "\b\f\u000b tab\tcr\rlf\n",
      "\ud800".repeat(100),
      "\"\\".repeat(100),
      -1.2345678901234567e-308,
      Number.MAX_VALUE,
      true,
      null,
      [undefined, () => 1, null, 1, "x"],
      { a: undefined, b: () => 1, "\u0001key\"": "v", nested: { deeper: [{ x: "\u001f".repeat(50) }] } },
      new Date(0),
      { at: new Date(8.64e15), headers: { "x-h": "y" } },
      Object.assign(Object.create({ inherited: "x".repeat(100) }), { own: 1 })
    ]
    for (const value of values) {
      assert.isAtLeast(jsonBytesAtMost(value), bytes(value), JSON.stringify(value)?.slice(0, 80))
      assert.isAtLeast(jsonBytesAtMostByLength(value), bytes(value), `by length: ${JSON.stringify(value)?.slice(0, 80)}`)
    }
  })

  it("by length alone, is never tighter than the bound that reads the characters", () => {
    const payload = { text: "\u0001".repeat(10), html: "<p>é</p>", n: 1, list: ["漢字", null] }
    assert.isAtLeast(jsonBytesAtMostByLength(payload), jsonBytesAtMost(payload))
    assert.strictEqual(jsonBytesAtMostByLength("abc"), 6 * 3 + 2)
  })

  it("stays within a few times the text for a message-shaped payload, so the exact count is rarely needed", () => {
    const payload = {
      message: { subject: "Hello", text: "word ".repeat(20_000), html: `<p>${"word ".repeat(20_000)}</p>`, headers: { from: "a@b.c" }, labels: ["received", "unread"], size: 40_000 },
      thread: { id: "thd_1", message_count: 1 }
    }
    assert.isAtMost(jsonBytesAtMost(payload), 7 * bytes(payload))
    assert.isAtMost(jsonBytesAtMost(payload), 1024 * 1024)
  })
})
