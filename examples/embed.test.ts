import { assert, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { runEmbedded } from "./embed.ts"

const here = fileURLToPath(new URL(".", import.meta.url))

describe("embedding example", () => {
  it("builds the engine on embedded storage and calls operations with no HTTP, validating as REST does", async () => {
    const result = await runEmbedded()
    assert.deepStrictEqual([...result.all].sort(), ["billing@agents.example.com", "support@agents.example.com"])
    assert.deepStrictEqual(result.visibleToKey, ["support@agents.example.com"])
    assert.deepStrictEqual(result.refused, { code: "validation_error", path: ["display_name"] })
  }, 120_000)

  it("the README's embedding section runs as written", () => {
    const readme = readFileSync(`${here}../README.md`, "utf8")
    const section = readme.slice(readme.indexOf("## Embedding the engine"))
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
    assert.isDefined(code)
    const file = `${here}readme-embed.generated.ts`
    writeFileSync(file, code ?? "")
    try {
      const out = execFileSync(process.execPath, ["--import", "tsx", file], { cwd: here, encoding: "utf8", timeout: 120_000 })
      assert.strictEqual(out.trim(), "support@agents.example.com validation_error")
    } finally {
      rmSync(file, { force: true })
    }
  }, 150_000)
})
