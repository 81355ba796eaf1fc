/**
 * JSON from untrusted clients, with its cost bounded before anything walks it.
 *
 * `parseJson` refuses a text nested deeper than MAX_JSON_DEPTH arrays and objects while it
 * scans the text, before `JSON.parse` builds anything: a 16 KB body can nest 8,000 levels,
 * and every later walk over such a value (validation, the schema, logging) would pay for
 * each level. No field of the API nests anywhere near the limit (metadata is flat).
 *
 * `findUnstorable` is the one walk over a decoded body that runs before its schema: it finds
 * the first string (a value or a key) that PostgreSQL cannot store, a NUL character or a
 * UTF-16 surrogate without its pair, and names its path. It is iterative with a node budget,
 * so no body can overflow the stack or hold the event loop.
 *
 * `jsonBodyOf` is the rule for a JSON request body, whichever route or adapter reads it.
 *
 * `jsonWork` counts what both do, so tests can prove that a hostile body was refused after a
 * bounded amount of work rather than trusting a clock.
 */
import { Effect } from "effect"
import { BadRequest } from "../errors/errors.ts"

/** The deepest nesting of arrays and objects accepted in a request body or message. */
export const MAX_JSON_DEPTH = 64

/** Work done on untrusted JSON since the process started (read by tests). */
export const jsonWork = { levelsScanned: 0, nodesWalked: 0 }

export type JsonParse =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly reason: "too_deep" | "invalid" }

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d

/**
 * Whether `text` nests deeper than `maxDepth`, scanning no further than the first level past
 * it. Brackets inside strings do not count; the text need not be valid JSON (the parser
 * decides that afterwards).
 */
export const nestsDeeperThan = (text: string, maxDepth: number): boolean => {
  let depth = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // Jump to the closing quote: one not preceded by an odd run of backslashes.
      let end = text.indexOf("\"", i + 1)
      while (end !== -1) {
        let slashes = 0
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++
        if (slashes % 2 === 0) break
        end = text.indexOf("\"", end + 1)
      }
      if (end === -1) return false
      i = end
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      depth++
      jsonWork.levelsScanned++
      if (depth > maxDepth) return true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
    }
  }
  return false
}

/** Parses `text`, refusing a nesting deeper than `maxDepth` before parsing. */
export const parseJson = (text: string, maxDepth: number = MAX_JSON_DEPTH): JsonParse => {
  if (nestsDeeperThan(text, maxDepth)) return { ok: false, reason: "too_deep" }
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch {
    return { ok: false, reason: "invalid" }
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * A JSON request body from its bytes: 400 bad_request when they are not UTF-8 (never text
 * with replacement characters), blank, nested past MAX_JSON_DEPTH, or not JSON.
 */
export const jsonBodyOf = (bytes: Uint8Array): Effect.Effect<unknown, BadRequest> => {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return Effect.fail(new BadRequest({ message: "The request body is not valid UTF-8." }))
  }
  if (text.trim() === "") {
    return Effect.fail(new BadRequest({ message: "The body is empty but the content type is JSON.", fix: "Send {} for an empty body." }))
  }
  const parsed = parseJson(text)
  if (parsed.ok) return Effect.succeed(parsed.value)
  return Effect.fail(
    parsed.reason === "too_deep"
      ? new BadRequest({
        message: `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`,
        fix: `Send at most ${MAX_JSON_DEPTH} levels of nesting.`
      })
      : new BadRequest({ message: "The request body is not valid JSON." })
  )
}

export type Unstorable = { readonly path: ReadonlyArray<string>; readonly why: "nul" | "surrogate" }

const whyNot = (s: string): Unstorable["why"] | undefined =>
  s.includes("\u0000") ? "nul" : s.isWellFormed() ? undefined : "surrogate"

/** A key as a path segment: its NULs spelled out, so the path itself prints and stores. */
const shown = (key: string) => key.replaceAll("\u0000", "\\u0000").toWellFormed()

/** Nodes visited at most by one walk; a value bigger than this is left to the schema. */
const NODE_BUDGET = 100_000

interface Frame {
  readonly value: unknown
  readonly parent: Frame | undefined
  readonly key: string | undefined
}

const pathOf = (frame: Frame, last?: string): ReadonlyArray<string> => {
  const path: Array<string> = last === undefined ? [] : [last]
  for (let f: Frame | undefined = frame; f !== undefined && f.key !== undefined; f = f.parent) path.push(f.key)
  return path.reverse()
}

/**
 * The first string of `value` (a key or a value, at any depth) that cannot be stored, in
 * document order, with its path; undefined when there is none.
 */
export const findUnstorable = (value: unknown): Unstorable | undefined => {
  const stack: Array<Frame> = [{ value, parent: undefined, key: undefined }]
  let budget = NODE_BUDGET
  while (stack.length > 0) {
    const frame = stack.pop()!
    if (--budget < 0) return undefined
    jsonWork.nodesWalked++
    const v = frame.value
    if (typeof v === "string") {
      const why = whyNot(v)
      if (why !== undefined) return { path: pathOf(frame), why }
      continue
    }
    if (typeof v !== "object" || v === null) continue
    // Children are pushed last-first so they pop in document order.
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], parent: frame, key: String(i) })
      continue
    }
    const keys = Object.keys(v)
    for (const key of keys) {
      const why = whyNot(key)
      if (why !== undefined) return { path: pathOf(frame, shown(key)), why }
    }
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!
      stack.push({ value: (v as Record<string, unknown>)[key], parent: frame, key })
    }
  }
  return undefined
}

// The characters JSON.stringify writes as \u00xx (\b and \f as two).
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/

/**
 * An upper bound of the UTF-8 bytes of `JSON.stringify(value)`, without building the text.
 * A string with no control character but tab, CR and LF takes at most twice its UTF-8
 * bytes (an escaped quote or backslash, `\n`; a lone surrogate, 3 bytes in UTF-8, is the
 * 6 of `\udxxx`); any other string at most 6 bytes a UTF-16 unit (`\u001f`); a number at
 * most 24 characters. A value with `toJSON` (a Date) is measured through it. For a size
 * check that is nearly always far under its limit (an event's body): only a bound over the
 * limit needs the text.
 */
export const jsonBytesAtMost = (value: unknown): number => boundOf(value, stringBytesAtMost)

/**
 * A looser bound than `jsonBytesAtMost` that reads no string, only its length: 6 bytes a
 * UTF-16 unit, the most JSON.stringify writes for one. For a check whose limit is far above
 * the usual value, where even a pass over the characters is work spent for nothing; when it
 * is over the limit, `jsonBytesAtMost` is the next, tighter, step.
 */
export const jsonBytesAtMostByLength = (value: unknown): number => boundOf(value, (s) => 6 * s.length + 2)

const stringBytesAtMost = (s: string): number => (CONTROL.test(s) ? 6 * s.length : 2 * Buffer.byteLength(s)) + 2

const boundOf = (value: unknown, stringBound: (s: string) => number): number => {
  switch (typeof value) {
    case "string":
      return stringBound(value)
    case "number":
      return 24
    case "boolean":
      return 5
    case "object": {
      if (value === null) return 4
      if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
        return boundOf((value as { toJSON: () => unknown }).toJSON(), stringBound)
      }
      let bytes = 2
      if (Array.isArray(value)) {
        for (const item of value) bytes += boundOf(item, stringBound) + 1
        return bytes
      }
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue
        bytes += stringBound(key) + 2 + boundOf((value as Record<string, unknown>)[key], stringBound)
      }
      return bytes
    }
    default:
      // undefined and functions: left out of objects, `null` in arrays
      return 4
  }
}
