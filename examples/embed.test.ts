import { assert, describe, it } from "@effect/vitest"
import { runEmbedded } from "./embed.ts"

describe("embedding example", () => {
  it("builds the engine on embedded storage and calls operations with no HTTP", async () => {
    const result = await runEmbedded()
    assert.deepStrictEqual([...result.all].sort(), ["billing@agents.example.com", "support@agents.example.com"])
    assert.deepStrictEqual(result.visibleToKey, ["support@agents.example.com"])
  }, 120_000)
})
