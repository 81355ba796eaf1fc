import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const here = fileURLToPath(new URL(".", import.meta.url))

describe("embedding example", () => {
  it("examples/embed.mjs creates an organization and an inbox, receives a message, lists it and replies, in INBOX_DATA_DIR, refusing as REST does", () => {
    const data = mkdtempSync(join(tmpdir(), "embed-"))
    try {
      // In the repository the engine is TypeScript source: tsx loads it. The packed packages
      // run the same file with plain node (install.test.ts).
      const out = execFileSync(process.execPath, ["--import", "tsx", "embed.mjs"], { cwd: here, encoding: "utf8", timeout: 120_000, env: { ...process.env, INBOX_DATA_DIR: data } })
      const result = JSON.parse(out.trim()) as { inbox: string; received: string; reply: boolean; refused: string }
      assert.match(result.inbox, /^support-\d+@agents\.example\.com$/)
      assert.deepStrictEqual([result.received, result.reply, result.refused], ["Hello", true, "validation_error"])
    } finally {
      rmSync(data, { recursive: true, force: true })
    }
  }, 150_000)

  it("docs/embedding.md shows examples/embed.mjs as it runs", () => {
    const section = readFileSync(`${here}../docs/embedding.md`, "utf8")
    const code = /```js\n([\s\S]*?)```/.exec(section)?.[1]
    assert.strictEqual(code, readFileSync(`${here}embed.mjs`, "utf8"))
  })
})
