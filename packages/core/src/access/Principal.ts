/**
 * The principal: who is calling, resolved by an adapter (API key, dashboard session, or the
 * operator's CLI) and passed to every operation.
 *
 * Scope rules of the spec live here once: a resource outside the scope is `not_found`; an
 * action the scope never allows (an inbox key creating inboxes) is `missing_permission`;
 * a permission list, when present, must name the permission an operation needs.
 */
import { Effect } from "effect"
import { MissingPermission, NotFound } from "../errors/errors.ts"
import type { Permission } from "./permissions.ts"

export type Scope =
  | { readonly type: "organization" }
  | { readonly type: "pod"; readonly podId: string }
  | { readonly type: "inbox"; readonly podId: string; readonly inboxId: string }

export interface Principal {
  readonly organizationId: string
  readonly scope: Scope
  /** Absent means full access within the scope. */
  readonly permissions?: ReadonlySet<Permission>
  /** The key that authenticated the request, when one did. */
  readonly keyId?: string
}

export const requirePermission = (principal: Principal, permission: Permission): Effect.Effect<void, MissingPermission> =>
  principal.permissions === undefined || principal.permissions.has(permission)
    ? Effect.void
    : Effect.fail(new MissingPermission({
      message: `This API key lacks the "${permission}" permission.`,
      fix: `Use a key that has "${permission}", or create one with it.`
    }))

/** Scopes narrower than `allowed` may never do this action (for example an inbox key creating a pod). */
export const requireScope = (
  principal: Principal,
  allowed: ReadonlyArray<Scope["type"]>,
  action: string
): Effect.Effect<void, MissingPermission> =>
  allowed.includes(principal.scope.type)
    ? Effect.void
    : Effect.fail(new MissingPermission({
      message: `A ${principal.scope.type}-scoped key cannot ${action}.`,
      fix: "Use a key with a wider scope."
    }))

export const canSeePod = (principal: Principal, podId: string): boolean =>
  principal.scope.type === "organization" || principal.scope.podId === podId

export const canSeeInbox = (principal: Principal, inbox: { readonly id: string; readonly pod_id: string }): boolean =>
  principal.scope.type === "organization" ||
  (principal.scope.type === "pod" ? principal.scope.podId === inbox.pod_id : principal.scope.inboxId === inbox.id)

export const notFound = (what: string, id: string) =>
  new NotFound({ message: `${what} ${id} was not found.` })

export const ensureVisible = <A>(visible: boolean, value: A, what: string, id: string): Effect.Effect<A, NotFound> =>
  visible ? Effect.succeed(value) : Effect.fail(notFound(what, id))
