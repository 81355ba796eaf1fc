/**
 * Ids: the engine's only source of randomness.
 *
 * Contract: `make(prefix)` returns `<prefix>_<hex>` with lowercase hex and never repeats
 * within a process (random 96 bits live; a counter in the testkit). `secret(bytes)` returns
 * `bytes` of cryptographic randomness as lowercase hex, for API key secrets and tokens.
 * `digits(n)` returns n decimal digits, for one-time codes. `fraction` is a number in
 * [0, 1), for jitter. Nothing here is atomic with storage: callers write the id in the same
 * statement that needs it.
 */
import { Context, Effect, Layer } from "effect"
import { randomBytes, randomFillSync, randomInt } from "node:crypto"

/** 96 random bits per id. */
const ID_BYTES = 12
const ID_BLOCK = ID_BYTES * 512

export type IdPrefix = "org" | "pod" | "inbox" | "msg" | "thr" | "draft" | "att" | "key" | "wh" | "evt" | "req" | "human" | "job" | "user" | "dlv" | "inv"

export class Ids extends Context.Service<Ids, {
  make(prefix: IdPrefix): Effect.Effect<string>
  secret(bytes: number): Effect.Effect<string>
  digits(n: number): Effect.Effect<string>
  readonly fraction: Effect.Effect<number>
}>()("inbox/Ids") {
  static readonly layer = Layer.sync(Ids, () => {
    // Ids are cut from a block of random bytes filled by one call: every request makes an id
    // (x-request-id), and a randomBytes call per id was a visible share of a request's CPU
    // under load (bench/PROFILE.md).
    // Secrets are not ids: each is drawn on its own.
    const block = Buffer.alloc(ID_BLOCK)
    let used = ID_BLOCK
    const idHex = () => {
      if (used + ID_BYTES > ID_BLOCK) {
        randomFillSync(block)
        used = 0
      }
      used += ID_BYTES
      return block.toString("hex", used - ID_BYTES, used)
    }
    return Ids.of({
      make: (prefix) => Effect.sync(() => `${prefix}_${idHex()}`),
      secret: (bytes) => Effect.sync(() => randomBytes(bytes).toString("hex")),
      digits: (n) => Effect.sync(() => Array.from({ length: n }, () => randomInt(10)).join("")),
      fraction: Effect.sync(() => randomInt(0, 2 ** 32) / 2 ** 32)
    })
  })
}
