/**
 * Decoding untrusted input into operation inputs.
 *
 * The spec separates two failures: a field the route does not allow is 400 `bad_request`
 * (the request is malformed), a field with a wrong type or value is 400 `validation_error`
 * with `errors[].path` naming it. `decodeInput` applies both rules for any Struct schema, so
 * REST, MCP and the CLI refuse the same inputs the same way.
 */
import { Effect, Schema, SchemaIssue } from "effect"
import { BadRequest, type FieldIssue, ValidationError } from "../errors/errors.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

export const issuesOf = (issue: SchemaIssue.Issue): ReadonlyArray<FieldIssue> =>
  formatter(issue).issues.map((i) => ({
    path: (i.path ?? []).map((p) => String(typeof p === "object" && p !== null && "key" in p ? p.key : p)),
    message: i.message
  }))

export const validationError = (errors: ReadonlyArray<FieldIssue>, message?: string) =>
  new ValidationError({
    message: message ?? (errors.length === 1 && errors[0] ? `${errors[0].path.join(".") || "body"}: ${errors[0].message}` : "The request failed validation."),
    errors
  })

export const decodeInput = <S extends Schema.Top & { readonly fields: Schema.Struct.Fields }>(
  schema: S,
  input: unknown,
  where: "body" | "query" = "body"
): Effect.Effect<S["Type"], BadRequest | ValidationError, S["DecodingServices"]> =>
  Effect.gen(function*() {
    const value = input ?? {}
    if (typeof value !== "object" || Array.isArray(value)) {
      return yield* validationError([{ path: [], message: `Expected a JSON object ${where}` }])
    }
    const unknown = Object.keys(value).filter((k) => !(k in schema.fields))
    if (unknown.length > 0) {
      return yield* new BadRequest({
        message: `Unknown field${unknown.length > 1 ? "s" : ""} in ${where}: ${unknown.join(", ")}`,
        fix: `Allowed fields: ${Object.keys(schema.fields).join(", ")}`
      })
    }
    return yield* Schema.decodeUnknownEffect(schema)(value, { errors: "all" }).pipe(
      Effect.mapError((e) => validationError(issuesOf(e.issue)))
    )
  })
