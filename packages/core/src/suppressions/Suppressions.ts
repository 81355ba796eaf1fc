/**
 * Suppressions (spec: Suppression): addresses that bounced hard or complained. Sends to a
 * suppressed address are refused with 422 recipient_suppressed until the suppression is
 * deleted. They are created by the mail provider's events (a hard bounce, a complaint) and
 * by the operator (`inboxctl suppressions add`).
 */
import { Context, type Effect } from "effect"

export type SuppressionReason = "bounce" | "complaint" | "manual"

export interface NewSuppression {
  readonly address: string
  readonly reason: SuppressionReason
  readonly source_message_id?: string
  readonly pod_id?: string
  readonly inbox_id?: string
  readonly thread_id?: string
}

export class Suppressions extends Context.Service<Suppressions, {
  /** The given addresses that are suppressed in the organization (lower-cased). */
  suppressed(organizationId: string, addresses: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>>
  /** Records a suppression; an address already suppressed keeps its first record. */
  add(organizationId: string, suppression: NewSuppression): Effect.Effect<void>
}>()("inbox/Suppressions") {}
