/**
 * The webhook secrets sealed at rest (the signing secret, the custom header values) and
 * their rotation, which Webhooks and the delivery handler each build before they open one
 * (one layer object: built once).
 */
import { resealing, type SealedPlace } from "../shared/SecretRotation.ts"

export const WEBHOOK_SEALED: ReadonlyArray<SealedPlace> = [
  { purpose: "webhook", table: "webhooks", owner: "id", column: "secret" },
  // Header values written before they were sealed (migration 0034, or a server without a key) are sealed at start.
  { purpose: "webhook_headers", table: "webhooks", owner: "id", column: "header_values", sealAtStart: true }
]

export const webhookResealing = resealing(WEBHOOK_SEALED)
