/**
 * @inbox/core/ports: the ports the engine runs over, for those who implement or provide one
 * (the testkit's in-memory layers, a custom blob store, another transport). Each port is an
 * Effect service with its contract in its module's opening comment; the testkit holds the
 * contract suites every implementation must pass (mailTransportContract, blobStoreContract).
 *
 * Storage: PostgreSQL or PGlite as an SqlClient (Database), with Signals for LISTEN/NOTIFY;
 * raw mail and attachment bytes in a content-addressed BlobStore; outgoing mail through a
 * MailTransport; outbound HTTP (webhooks, URL attachments) through Egress; DNS through Dns;
 * ids from Ids; and the Settings.
 */
export * as Database from "./db/Database.ts"
export { pgliteStream } from "./db/pglite-bridge.ts"
export { type Signal, Signals } from "./db/Signals.ts"
export { type Blob, BlobStore, type BlobStoreName, type PresignOptions } from "./blobs/BlobStore.ts"
export * as BlobStores from "./blobs/stores.ts"
export { MailTransport, type OutgoingMail, readLocalOutbox } from "./transport/MailTransport.ts"
export { Egress, EgressError, type TestResponse as EgressTestResponse } from "./egress/Egress.ts"
export { Dns, DnsUnavailable, type MxRecord, type RawResolver } from "./dns/Dns.ts"
export { Ids, type IdPrefix } from "./platform/Ids.ts"
export { SETTING_DEFAULTS, Settings, type SettingsShape } from "./settings/Settings.ts"
