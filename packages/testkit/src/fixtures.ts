/**
 * Setting up tenants the way an operator does (`inboxctl org create`): an organization
 * with an organization-level key holding every permission.
 */
import { ApiKeys, Organizations, type PlanId } from "@inbox/core/internal"
import { Effect } from "effect"

export const newOrganization = (options: { readonly verified?: boolean; readonly plan?: PlanId; readonly ownerEmail?: string } = {}) =>
  Effect.gen(function*() {
    const { organization, defaultPodId } = yield* (yield* Organizations).create({
      ownerEmail: options.ownerEmail ?? "owner@example.com",
      verified: options.verified ?? true,
      ...(options.plan === undefined ? {} : { plan: options.plan })
    })
    const key = yield* (yield* ApiKeys).issue(organization.id, { name: "owner" })
    return { organizationId: organization.id, defaultPodId, key: key.api_key }
  })
