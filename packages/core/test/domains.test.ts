/**
 * The custom-domain rules that need no database: the state machine of docs/domains.md as
 * one function, and DKIM keys sealed at rest (AES-256-GCM bound to the domain).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { transition } from "../src/domains/Domains.ts"
import { generateDkimKey, open, seal } from "../src/domains/dkim.ts"

const graded = (...grades: Array<"MISSING" | "INVALID" | "VALID">) => ({ kind: "graded" as const, grades })

describe("domain states", () => {
  it("every record VALID makes any state VERIFIED, with no reason", () => {
    for (const from of ["NOT_STARTED", "PENDING", "VERIFYING", "VERIFIED", "FAILED"] as const) {
      assert.deepStrictEqual(transition(from, graded("VALID", "VALID")), { status: "VERIFIED", reason: null })
    }
  })

  it("a never-verified domain with a record missing is PENDING, dns_records_missing; one INVALID makes it dns_records_invalid", () => {
    assert.deepStrictEqual(transition("NOT_STARTED", graded("VALID", "MISSING")), { status: "PENDING", reason: "dns_records_missing" })
    assert.deepStrictEqual(transition("PENDING", graded("MISSING", "INVALID")), { status: "PENDING", reason: "dns_records_invalid" })
    assert.deepStrictEqual(transition("VERIFYING", graded("MISSING")), { status: "PENDING", reason: "dns_records_missing" })
  })

  it("a verified domain whose records no longer check out is FAILED, and stays FAILED until they do", () => {
    assert.deepStrictEqual(transition("VERIFIED", graded("VALID", "MISSING")), { status: "FAILED", reason: "dns_records_missing" })
    assert.deepStrictEqual(transition("FAILED", graded("INVALID")), { status: "FAILED", reason: "dns_records_invalid" })
  })

  it("a holder of a name another organization holds VERIFIED is FAILED with verified_by_another_organization, whatever DNS says", () => {
    for (const from of ["NOT_STARTED", "PENDING", "VERIFYING", "FAILED"] as const) {
      for (const outcome of [graded("VALID", "VALID"), graded("MISSING"), { kind: "unavailable" as const }]) {
        assert.deepStrictEqual(transition(from, outcome, true), { status: "FAILED", reason: "verified_by_another_organization" })
      }
    }
  })

  it("DNS that cannot answer makes a domain VERIFYING with dns_unavailable, but never demotes a VERIFIED one", () => {
    assert.deepStrictEqual(transition("PENDING", { kind: "unavailable" }), { status: "VERIFYING", reason: "dns_unavailable" })
    assert.deepStrictEqual(transition("VERIFIED", { kind: "unavailable" }), { status: "VERIFIED", reason: null })
  })
})

describe("DKIM keys at rest", () => {
  it.effect("a sealed private key opens with the same secret and domain only", () =>
    Effect.gen(function*() {
      const key = yield* generateDkimKey
      const sealed = seal("secret-one", "example.com", key.privateKeyPem)
      assert.notInclude(sealed, "PRIVATE KEY")
      assert.strictEqual(yield* open("secret-one", "example.com", sealed), key.privateKeyPem)
      assert.isUndefined(yield* open("secret-two", "example.com", sealed))
      assert.isUndefined(yield* open("secret-one", "other.example", sealed))
      assert.isUndefined(yield* open("secret-one", "example.com", "v0:garbage"))
    }))
})
