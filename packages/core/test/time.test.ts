import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { iso, isoOf } from "../src/shared/time.ts"

// The API's timestamps are ISO 8601 UTC with milliseconds (spec: "timestamps"); isoOf computes
// them without Date's formatter and must write exactly what toISOString writes.
describe("timestamps (shared/time.ts)", () => {
  it("isoOf writes what Date.prototype.toISOString writes, for every millisecond of years 0 to 9999 and beyond", () => {
    fc.assert(
      fc.property(fc.integer({ min: -8_640_000_000_000_000, max: 8_640_000_000_000_000 }), (ms) => {
        expect(isoOf(ms)).toBe(new Date(ms).toISOString())
      }),
      { numRuns: 20_000 }
    )
    fc.assert(
      fc.property(fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }), (ms) => {
        expect(isoOf(ms)).toBe(new Date(ms).toISOString())
      }),
      { numRuns: 50_000 }
    )
  })

  it("isoOf agrees at the edges: the epoch, leap days, the ends of years 0 and 9999, and before the epoch", () => {
    const edges = [
      0, -1, 1, 951_782_400_000, 951_868_799_999, 4_107_542_399_999, 1_709_164_800_000,
      -62_167_219_200_000, -62_167_219_200_001, 253_402_300_799_999, 253_402_300_800_000, -86_400_000, -31_536_000_001
    ]
    for (const ms of edges) expect(isoOf(ms)).toBe(new Date(ms).toISOString())
    expect(iso(new Date(1_765_000_000_123))).toBe("2025-12-06T05:46:40.123Z")
  })

  it("isoOf stays exact when calls alternate between seconds and fall within one (its text up to the second is reused)", () => {
    const base = 1_765_000_000_000
    const calls = [base, base + 999, base + 1000, base + 5, base + 1999, base + 2000, base + 1, base - 1, base + 1500, base - 1000]
    for (const ms of [...calls, ...calls.reverse()]) expect(isoOf(ms)).toBe(new Date(ms).toISOString())
  })

  it("an invalid time throws as toISOString does", () => {
    expect(() => isoOf(Number.NaN)).toThrow(RangeError)
  })
})
