/**
 * A webhook's custom header values at rest. They are often credentials (an API key of the
 * receiving service), so they are kept like the signing secret: one JSON object of name
 * (lower case) to value, sealed under INBOX_SECRET_KEY with the webhook's id as owner
 * (shared/sealing.ts, purpose `webhook_headers`), or plain JSON on a server without a key;
 * no value at all when there are no headers. The names are kept apart and readable, since
 * the API shows them (spec: values are write-only). A plain value starts with `{`, a sealed
 * one with `v1:`, so the two never mix up.
 */
import { Effect, Option, Schema } from "effect"
import { openStored, sealIfKey } from "../shared/sealing.ts"

export type HeaderValues = Readonly<Record<string, string>>

const decode = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.String)))

/** The stored form of a webhook's headers: null when there are none. */
export const sealHeaderValues = (secretKey: string | undefined, webhookId: string, headers: HeaderValues): string | null =>
  Object.keys(headers).length === 0 ? null : sealIfKey(secretKey, "webhook_headers", webhookId, JSON.stringify(headers))

/** The header values a stored form holds; undefined when it was sealed under another key. */
export const openHeaderValues = (secretKey: string | undefined, webhookId: string, stored: string | null): Effect.Effect<HeaderValues | undefined> =>
  stored === null
    ? Effect.succeed({})
    : Effect.map(openStored(secretKey, "webhook_headers", webhookId, stored), (text) => text === undefined ? undefined : Option.getOrUndefined(decode(text)))
