/**
 * @inbox/core: the engine's public API, the one door adapters (HTTP, MCP, the CLI, the mail
 * servers, the dashboard's server side) and embedding applications use.
 *
 * - the engine: `createEngine` (Promises) or the `Engine` service and its layers, whose
 *   `call(name, input, caller)` runs any operation of the catalogue, typed per operation;
 * - the catalogue: every operation with its routes, access, permission, input and output
 *   schemas, MCP and CLI faces (what REST, OpenAPI, MCP tools and CLI commands derive from);
 * - the errors of the spec, with their wire codes and statuses;
 * - the settings;
 * - the rules an adapter applies to what it reads off the wire before the engine sees it:
 *   the Host and Origin checks, JSON bodies, secrets compared in constant time;
 * - the operator's tools that work on storage itself: backups, the move to PostgreSQL.
 *
 * Port implementations (a blob store, a transport) use `@inbox/core/ports`. Everything
 * else is internal.
 */

// The engine.
export {
  createEngine,
  type EmbeddedOptions,
  Engine,
  type EngineApi,
  type EngineHandle,
  type InputOf,
  type LiveConnection,
  type LiveHandlers,
  LOCAL,
  type OperationName,
  type OutputOf
} from "./engine/Engine.ts"
export type { Credential, RawCall } from "./engine/run.ts"

// The catalogue.
export type {
  Access,
  CallContext,
  CliFace,
  Download,
  Method,
  OperatorCredential,
  Output,
  RequiredPermission,
  Route,
  SessionResult,
  ToolFace
} from "./catalogue/Operation.ts"
export { paramNames, routeOf } from "./catalogue/Operation.ts"
export { type CatalogueEntry as Operation, findOperation, operations } from "./engine/catalogue.ts"
export { inputJsonSchema, type JsonSchema, type ObjectJsonSchema, outputJsonSchema } from "./catalogue/jsonSchema.ts"
export { type Permission, PERMISSIONS } from "./access/permissions.ts"
export { holds, type Principal, type Scope } from "./access/Principal.ts"
export type { NewSession, Session } from "./access/Session.ts"
export { PLAN_IDS, type PlanId } from "./plans/plans.ts"
export { SUPPRESSION_REASONS, type SuppressionReason } from "./suppressions/Suppressions.ts"
export { EVENT_TYPES, type EventType } from "./events/catalogue.ts"
export { EventEnvelope } from "./events/Events.ts"
export type { ListenRefused, ServerFrame, Subscription } from "./events/Live.ts"

// The errors.
export * from "./errors/errors.ts"
export { type ErrorBody, errorBody, internalErrorBody, retryAfterOf, statusOf } from "./errors/wire.ts"
export { validationError } from "./shared/validation.ts"

// The settings.
export { SETTING_DEFAULTS, Settings, type SettingsShape } from "./settings/Settings.ts"
export { defaultText, type Setting, type SettingName, type SettingScope, SETTINGS, settingDefault } from "./settings/registry.ts"

// What adapters apply to the wire.
export { checkHost, checkSameOrigin } from "./access/hosts.ts"
export { jsonBodyOf, MAX_JSON_DEPTH, parseJson } from "./shared/json.ts"
export { sameSecret } from "./shared/secrets.ts"
export { intakeFull } from "./ratelimit/IntakeBudget.ts"
export { envelopeSenderRefusal } from "./sending/Sending.ts"
export { traced, tracedWith } from "./shared/span.ts"
export { isoOf } from "./shared/time.ts"
export * as OperatorMetrics from "./operating/metrics.ts"

// The operator's tools on storage itself.
export * as Backup from "./operating/Backup.ts"
export * as Move from "./operating/Move.ts"
export { DataFolderInUse, LOCK_FILE } from "./db/lock.ts"
export { Migrations } from "./db/Database.ts"
