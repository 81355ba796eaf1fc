/**
 * Decoding untrusted input into operation inputs.
 *
 * The spec separates two failures: a field the route does not allow is 400 `bad_request`
 * (the request is malformed), a field with a wrong type or value is 400 `validation_error`
 * with `errors[].path` naming it. `decodeInput` applies both rules for any Struct schema, so
 * REST, MCP, the CLI and embedding applications refuse the same inputs the same way.
 *
 * The work per request is bounded whatever a client sends: unknown fields are found with
 * own-property checks (so `constructor` or `__proto__` is unknown like any other name) and
 * the scan stops after a few; a NUL character or an unpaired UTF-16 surrogate anywhere (a
 * key or a value, at any depth) is refused before the schema runs, since PostgreSQL can
 * store neither (json.ts `findUnstorable`, an iterative walk); at most a few issues are
 * reported.
 */
import { Effect, Schema, type SchemaAST, SchemaIssue } from "effect"
import { BadRequest, type FieldIssue, ValidationError } from "../errors/errors.ts"
import { findUnstorable, type Unstorable } from "./json.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** At most this many offending fields are named in one answer. */
export const MAX_REPORTED_ISSUES = 10

export const issuesOf = (issue: SchemaIssue.Issue): ReadonlyArray<FieldIssue> =>
  formatter(issue).issues.slice(0, MAX_REPORTED_ISSUES).map((i) => ({
    path: (i.path ?? []).map((p) => String(typeof p === "object" && p !== null && "key" in p ? p.key : p)),
    message: i.message
  }))

export const validationError = (errors: ReadonlyArray<FieldIssue>, message?: string) =>
  new ValidationError({
    message: message ??
      (errors.length === 1 && errors[0] ? `${errors[0].path.join(".") || "body"}: ${errors[0].message}` : "The request failed validation."),
    errors
  })

const unstorableIssue = (found: Unstorable) =>
  validationError([{
    path: [...found.path],
    message: found.why === "nul" ? "NUL characters are not allowed" : "Unpaired UTF-16 surrogates are not allowed (the text is not valid Unicode)"
  }])

const MAX_NAMED_UNKNOWN = 5

// Decoders are compiled once per input schema, not per request.
const decoders = new WeakMap<Schema.Top, (input: unknown, options?: SchemaAST.ParseOptions) => Effect.Effect<unknown, Schema.SchemaError, unknown>>()
const ALL_ERRORS: SchemaAST.ParseOptions = { errors: "all" }

const decoderOf = <S extends Schema.Top>(schema: S) => {
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknownEffect(schema) as never
    decoders.set(schema, decode)
  }
  return decode as (input: unknown, options?: SchemaAST.ParseOptions) => Effect.Effect<S["Type"], Schema.SchemaError, S["DecodingServices"]>
}

export const decodeInput = <S extends Schema.Top & { readonly fields: Schema.Struct.Fields }>(
  schema: S,
  input: unknown,
  where: "body" | "query" | "headers" = "body"
): Effect.Effect<S["Type"], BadRequest | ValidationError, S["DecodingServices"]> => {
  const value = input ?? {}
  if (typeof value !== "object" || Array.isArray(value)) {
    return Effect.fail(validationError([{ path: [], message: `Expected a JSON object ${where}` }]))
  }
  const unknown: Array<string> = []
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue
    if (!Object.hasOwn(schema.fields, key)) {
      unknown.push(key.length > 64 ? `${key.slice(0, 64)}...` : key)
      if (unknown.length >= MAX_NAMED_UNKNOWN) break
    }
  }
  if (unknown.length > 0) {
    const shown = unknown.map((k) => JSON.stringify(k)).join(", ")
    return Effect.fail(
      new BadRequest({
        message: `Unknown field${unknown.length > 1 ? "s" : ""} in ${where}: ${shown}${unknown.length >= MAX_NAMED_UNKNOWN ? ", ..." : ""}`,
        fix: `Allowed fields: ${Object.keys(schema.fields).join(", ") || "none"}`
      })
    )
  }
  const unstorable = findUnstorable(value)
  if (unstorable !== undefined) return Effect.fail(unstorableIssue(unstorable))
  return Effect.mapError(decoderOf(schema)(value, ALL_ERRORS), (e) => validationError(issuesOf(e.issue)))
}
