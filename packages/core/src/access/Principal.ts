/**
 * The principal: who is calling, resolved by an adapter (API key, dashboard session, or the
 * operator's CLI) and passed to every operation that needs an organization member.
 *
 * Scope rules of the spec live here and in visibility.ts, once: a resource outside the
 * scope is `not_found`; an action the scope never allows (an inbox key creating inboxes) is
 * `missing_permission`; a permission list, when present, must name the permission an
 * operation needs. `runOperation` applies the last two before an operation runs.
 */
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
  /** The dashboard session that authenticated the request, when one did: its person and their role. */
  readonly session?: { readonly userId: string; readonly role: "owner" | "admin" | "member" }
}

/**
 * Whether the principal holds `permission`. billing_read and billing_manage cannot be
 * granted in a list: only an organization-level principal without a list holds them.
 * `any` is held by every member: what asks for it tells a caller only about itself.
 */
export const holds = (principal: Principal, permission: Permission | "billing_read" | "billing_manage" | "any"): boolean =>
  permission === "any" ? true : permission === "billing_read" || permission === "billing_manage"
    ? principal.permissions === undefined && principal.scope.type === "organization"
    : principal.permissions === undefined || principal.permissions.has(permission)

export const missingPermission = (permission: string) =>
  new MissingPermission({
    message: `This API key lacks the "${permission}" permission.`,
    fix: permission.startsWith("billing_")
      ? "Billing needs an organization-level key without a permission list."
      : `Use a key that has "${permission}", or create one with it.`
  })

export const scopeTooNarrow = (principal: Principal, allowed: ReadonlyArray<Scope["type"]>) =>
  new MissingPermission({
    message: `This operation needs a key scoped to ${allowed.map((s) => s === "organization" ? "the organization" : `a ${s}`).join(" or ")}; this key is ${principal.scope.type}-scoped.`,
    fix: "Use a key with a wider scope."
  })

export const notFound = (what: string, id: string) => new NotFound({ message: `${what} ${id} was not found.` })
