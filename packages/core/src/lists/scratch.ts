// SCRATCH (not committed): stand-ins until the lists branch lands.
import { Effect, Layer } from "effect"
import { Lists } from "./Lists.ts"
import { Suppressions } from "../suppressions/Suppressions.ts"
export const ListsScratch = Layer.succeed(Lists, Lists.of({ verdicts: (_s, _d, addresses) => Effect.succeed(new Map(addresses.map((a) => [a.toLowerCase(), "allow" as const]))) }))
export const SuppressionsScratch = Layer.succeed(Suppressions, Suppressions.of({ suppressed: () => Effect.succeed([]), add: () => Effect.void }))
