/**
 * KeyCache: authenticated API keys remembered by the SHA-256 of their secret, so a request
 * pays no database round trip for its key (ApiKeys.authenticate).
 *
 * Contract. Revocation stays immediate, in this process and in every other:
 * - the process that ends a key's life (a revocation, or the deletion of the inbox or pod a
 *   key is scoped to, which deletes the key with it) calls `forgetKey` or `forgetScope`
 *   after its commit and before it answers, so its own next request looks the key up again;
 * - every other process forgets the key when the `api_keys` signal of that commit reaches
 *   it (the trigger of migration 0007 sends it on every change, deletion and cascade);
 * - a lookup that raced a change (read the row, then the change was announced) is not kept:
 *   `remember` takes the mark read before the lookup and keeps nothing when the mark has
 *   moved since;
 * - signals are best effort, so an entry is trusted for at most KEY_CACHE_TTL_MS: the
 *   longest a lost signal can matter.
 * All of it is synchronous, in memory; nothing here can fail.
 *
 * What outlives a request (a WebSocket) `watch`es its principal: the callback runs when
 * the key is forgotten for any of those reasons, in this process or by another's signal.
 */
import { Clock, Context, Effect, Layer, type Scope, Stream } from "effect"
import type { Principal } from "../access/Principal.ts"
import { Signals } from "../db/Signals.ts"

/** How long a cached key is trusted without a signal. */
export const KEY_CACHE_TTL_MS = 60_000
/** Entries kept at most; past it the cache starts over (a flood of distinct keys). */
const KEY_CACHE_MAX = 100_000
/** The Signals channel of key changes (the message is the key id); migration 0007's trigger sends on it. */
export const KEYS_CHANNEL = "api_keys"

interface Entry {
  readonly principal: Principal
  readonly expires: number
}

export class KeyCache extends Context.Service<KeyCache, {
  /** The principal of a cached, unexpired key. */
  get(hash: string): Effect.Effect<Principal | undefined>
  /** The change mark to read before a lookup and hand to `remember`. */
  readonly mark: Effect.Effect<number>
  remember(hash: string, principal: Principal, mark: number): Effect.Effect<void>
  /** Forgets a key (its revocation committed). */
  forgetKey(keyId: string): Effect.Effect<void>
  /** Forgets the keys scoped to an inbox or pod (its deletion committed). */
  forgetScope(inboxOrPodId: string): Effect.Effect<void>
  /** Calls `ended` (once) when the principal's key is revoked, changed or deleted, until the scope closes. */
  watch(principal: Principal, ended: () => void): Effect.Effect<void, never, Scope.Scope>
}>()("inbox/KeyCache") {
  static readonly layerNoDeps = Layer.effect(KeyCache, Effect.gen(function*() {
    const signals = yield* Signals
    const entries = new Map<string, Entry>()
    const watchers = new Set<{ readonly principal: Principal; readonly ended: () => void }>()
    let generation = 0
    const forget = (drop: (principal: Principal) => boolean) => {
      generation++
      for (const [hash, entry] of entries) if (drop(entry.principal)) entries.delete(hash)
      for (const watcher of watchers) {
        if (!drop(watcher.principal)) continue
        watchers.delete(watcher)
        watcher.ended()
      }
    }
    const forgetKey = (keyId: string) => forget((p) => p.keyId === keyId)
    yield* signals.subscribe(KEYS_CHANNEL).pipe(
      Stream.runForEach((keyId) => Effect.sync(() => forgetKey(keyId))),
      Effect.forkScoped
    )
    return KeyCache.of({
      get: (hash) =>
        Effect.map(Clock.currentTimeMillis, (nowMs) => {
          const entry = entries.get(hash)
          return entry !== undefined && entry.expires > nowMs ? entry.principal : undefined
        }),
      mark: Effect.sync(() => generation),
      remember: (hash, principal, mark) =>
        Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
          Effect.sync(() => {
            if (mark !== generation) return
            if (entries.size >= KEY_CACHE_MAX) entries.clear()
            entries.set(hash, { principal, expires: nowMs + KEY_CACHE_TTL_MS })
          })),
      forgetKey: (keyId) => Effect.sync(() => forgetKey(keyId)),
      forgetScope: (id) =>
        Effect.sync(() =>
          forget((p) => (p.scope.type === "inbox" && (p.scope.inboxId === id || p.scope.podId === id)) || (p.scope.type === "pod" && p.scope.podId === id))
        ),
      watch: (principal, ended) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const watcher = { principal, ended }
            watchers.add(watcher)
            return watcher
          }),
          (watcher) => Effect.sync(() => watchers.delete(watcher))
        ).pipe(Effect.asVoid)
    })
  }))

  static readonly layer = KeyCache.layerNoDeps
}
