/**
 * Requests for every operation of the catalogue, generated from the operations' own input
 * schemas (their JSON Schema, as MCP and OpenAPI publish them): valid ones, and hostile ones
 * (NUL and unpaired surrogates, strings far past their limits, wrong types, unknown and
 * prototype-named fields, bodies that are not JSON or not UTF-8, JSON nested past the
 * limit, broken path parameters and page tokens, missing and foreign keys). A server must
 * answer every one of them without a 500 (502 and 503 are documented answers).
 *
 * The generator knows nothing of any rule: it only reads the catalogue and a world of ids
 * (`FuzzWorld`) built over the API, so a new operation is fuzzed as soon as it exists.
 * It is used by the API fuzz test (a few thousand requests in CI, in process) and by
 * `pnpm fuzz:api` (bench/fuzz-api.ts: a real server over HTTP, 100,000 requests or more).
 */
import { inputJsonSchema, type JsonSchema, MAX_JSON_DEPTH, type Operation, operations, signWebhook } from "@inbox/core/internal"
import fc from "fast-check"

export interface FuzzRequest {
  readonly op: string
  readonly method: string
  /** Path and query. */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | Uint8Array
}

/** Ids and credentials the generated requests aim at (made over the API beforehand). */
export interface FuzzWorld {
  /** Keys by role: an organization key first, then narrower and foreign ones. */
  readonly keys: ReadonlyArray<string>
  /** Known ids per path parameter name (`inbox_id`, `pod_id`, ...). */
  readonly ids: Readonly<Record<string, ReadonlyArray<string>>>
  /** Addresses of hosted inboxes, for `to` fields and inbound mail. */
  readonly addresses: ReadonlyArray<string>
  readonly inboundSecret: string
  readonly providerSecret: string
  /** Seconds since the epoch, for signed provider events. */
  readonly now: () => number
}

type Schema = { readonly [key: string]: unknown }

const isObject = (u: unknown): u is Schema => typeof u === "object" && u !== null && !Array.isArray(u)

/** Strings that have made servers fail: what no field may store, and what parsers choke on. */
export const HOSTILE_STRINGS: ReadonlyArray<string> = [
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00y",
  "",
  " ",
  "\u202e\u0041",
  "%00",
  "%ED%A0%80",
  "../../etc/passwd",
  "'; DROP TABLE messages; --",
  "\\u0000",
  "<script>alert(1)</script>",
  "=?utf-16be?B?2AAAQQ==?=",
  "\r\nBcc: victim@example.org",
  "😀".repeat(300),
  "a".repeat(70_000),
  "1e309",
  "-0",
  "NaN",
  "null",
  "[]",
  "{}",
  "__proto__",
  "constructor"
]

const HOSTILE_VALUES: ReadonlyArray<unknown> = [
  ...HOSTILE_STRINGS,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  2 ** 53 + 1,
  true,
  false,
  null,
  [],
  {},
  [null],
  { "__proto__": { polluted: true } },
  ["\u0000"],
  { "\ud800": "x" }
]

const hostileString = fc.constantFrom(...HOSTILE_STRINGS)
const hostileValue = fc.constantFrom(...HOSTILE_VALUES)

const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels)

/** Hostile bodies that are not a JSON object at all. */
const HOSTILE_BODIES: ReadonlyArray<string | Uint8Array> = [
  "",
  " ",
  "{",
  "null",
  "[]",
  "\"text\"",
  "123",
  "{\"a\":1,\"a\":2}",
  nested(MAX_JSON_DEPTH + 1),
  `{"x":${nested(5000)}}`,
  "{\"__proto__\":{\"polluted\":true}}",
  Uint8Array.from([0x7b, 0xff, 0xfe, 0x7d]),
  Uint8Array.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
  "{\"s\":\"\\ud800\"}",
  "{\"s\":\"\\u0000\"}"
]

const fieldString = (name: string, world: FuzzWorld): fc.Arbitrary<string> => {
  if (/(^|_)(to|cc|bcc|reply_to|entry|email|address|from|human_email)$/.test(name)) {
    return fc.oneof(
      fc.constantFrom(...world.addresses, "someone@example.net", "x@[127.0.0.1]", "not-an-address"),
      fc.emailAddress()
    )
  }
  if (name.endsWith("_id") || name.endsWith("_ids")) {
    const known = world.ids[name.replace(/s$/, "")] ?? []
    return known.length > 0 ? fc.oneof(fc.constantFrom(...known), fc.string({ maxLength: 40 })) : fc.string({ maxLength: 40 })
  }
  if (name === "url") return fc.constantFrom("https://93.184.215.14/hook", "http://127.0.0.1/", "https://[::1]/", "file:///etc/passwd", "https://example.org/x")
  if (name === "q") return fc.constantFrom("hello", "from:someone@example.net", "subject:(x OR y)", "label:unread", "\"quoted", "is:unread", "-x -y -z")
  if (name === "send_at" || name === "before" || name === "after" || name === "start" || name === "end") {
    return fc.oneof(fc.date({ min: new Date(2000, 0, 1), max: new Date(2100, 0, 1), noInvalidDate: true }).map((d) => d.toISOString()), fc.string({ maxLength: 20 }))
  }
  return fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 20 }))
}

/** A value of `schema` (valid in shape, often not in content), for field `name`. */
const valueOf = (schema: Schema, defs: Readonly<Record<string, unknown>>, name: string, world: FuzzWorld, depth = 0): fc.Arbitrary<unknown> => {
  const ref = schema["$ref"]
  if (typeof ref === "string") {
    const target = defs[ref.replace(/^#\/\$defs\//, "")]
    return isObject(target) && depth < 6 ? valueOf(target, defs, name, world, depth + 1) : fc.constant({})
  }
  const options = schema["anyOf"] ?? schema["oneOf"]
  if (Array.isArray(options) && options.length > 0) {
    return fc.oneof(...options.filter(isObject).map((o) => valueOf(o, defs, name, world, depth + 1)))
  }
  const values = schema["enum"]
  if (Array.isArray(values) && values.length > 0) return fc.constantFrom(...values)
  switch (schema["type"]) {
    case "string":
      return fieldString(name, world)
    case "integer": {
      const min = typeof schema["minimum"] === "number" ? schema["minimum"] : -10
      const max = typeof schema["maximum"] === "number" ? Math.min(schema["maximum"], 2 ** 31 - 1) : 1000
      return fc.integer({ min: Math.max(-(2 ** 31), min), max: Math.max(min, max) })
    }
    case "number":
      return fc.double({ noNaN: true })
    case "boolean":
      return fc.boolean()
    case "array": {
      const items = isObject(schema["items"]) ? schema["items"] : {}
      const maxItems = typeof schema["maxItems"] === "number" ? Math.min(schema["maxItems"], 5) : 5
      return fc.array(valueOf(items, defs, name, world, depth + 1), { maxLength: maxItems })
    }
    case "object": {
      const properties = isObject(schema["properties"]) ? schema["properties"] : {}
      const entries = Object.entries(properties).filter((e): e is [string, Schema] => isObject(e[1]))
      if (entries.length > 0) {
        const required = Array.isArray(schema["required"]) ? schema["required"] as ReadonlyArray<string> : []
        const record: Record<string, fc.Arbitrary<unknown>> = {}
        for (const [key, value] of entries) record[key] = valueOf(value, defs, key, world, depth + 1)
        return fc.record(record, { requiredKeys: entries.map(([k]) => k).filter((k) => required.includes(k)) })
      }
      const additional = schema["additionalProperties"]
      if (isObject(additional)) {
        return fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), valueOf(additional, defs, name, world, depth + 1), { maxKeys: 4 })
      }
      return fc.constant({})
    }
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

/** The string fields of an object schema's value, with their paths, for the mutations below. */
const mutate = (value: Record<string, unknown>): fc.Arbitrary<Record<string, unknown>> =>
  fc.oneof(
    // One field gets a hostile value.
    fc.tuple(fc.constantFrom(...(Object.keys(value).length > 0 ? Object.keys(value) : ["name"])), hostileValue).map(([key, bad]) => ({ ...value, [key]: bad })),
    // A hostile string inside a list or map field.
    fc.tuple(fc.constantFrom(...(Object.keys(value).length > 0 ? Object.keys(value) : ["labels"])), hostileString).map(([key, bad]) => ({ ...value, [key]: [bad] })),
    fc.tuple(fc.constantFrom(...(Object.keys(value).length > 0 ? Object.keys(value) : ["metadata"])), hostileString, hostileString).map(([key, k, v]) => ({ ...value, [key]: { [k]: v } })),
    // Fields the route does not have.
    fc.constantFrom("constructor", "toString", "__proto__", "hasOwnProperty", "unknown_field", "\u0000").map((key) => ({ ...value, [key]: 1 }))
  )

const pick = <A>(world: ReadonlyArray<A>): fc.Arbitrary<A> => fc.constantFrom(...world)

/** A path parameter: a known id most of the time, else something hostile or unknown. */
const paramOf = (name: string, world: FuzzWorld, method: string): fc.Arbitrary<string> => {
  const known = world.ids[name] ?? []
  const hostile = fc.constantFrom("%00", "..", "%2e%2e", "a".repeat(600), "%ED%A0%80", "%F0%9F%98%80", "x%2Fy", "%20", "inbox_%00", "%25")
  // World resources are deleted rarely, so most requests find them.
  const knownWeight = method === "DELETE" ? 1 : 8
  return known.length > 0
    ? fc.oneof({ arbitrary: pick(known).map(encodeAny), weight: knownWeight }, { arbitrary: fc.string({ minLength: 1, maxLength: 30 }).map(encodeAny), weight: 1 }, { arbitrary: hostile, weight: 1 })
    : fc.oneof(fc.string({ minLength: 1, maxLength: 30 }).map(encodeAny), hostile)
}

/** Percent-encoding that spells an unpaired surrogate as the bytes of one (not UTF-8), where encodeURIComponent throws. */
export const encodeAny = (s: string): string => s.split(LONE_SURROGATE).map(encodeURIComponent).join("%ED%A0%80")

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

const queryOf = (input: Readonly<Record<string, unknown>>) =>
  Object.entries(input).map(([k, v]) => `${encodeAny(k)}=${encodeAny(typeof v === "string" ? v : JSON.stringify(v))}`).join("&")

/** One operation's requests. */
const requestsFor = (op: Operation, world: FuzzWorld): fc.Arbitrary<FuzzRequest> => {
  const schema = inputJsonSchema(op) as unknown as Schema
  const defs = isObject(schema["$defs"]) ? schema["$defs"] : {}
  const input = valueOf(schema, defs, "", world) as fc.Arbitrary<Record<string, unknown>>
  const inputs = fc.oneof({ arbitrary: input, weight: 3 }, { arbitrary: input.chain(mutate), weight: 2 })
  const route = pick(op.routes)
  const key = fc.oneof(
    { arbitrary: fc.constant(world.keys[0]!), weight: 6 },
    { arbitrary: pick(world.keys), weight: 3 },
    { arbitrary: fc.constantFrom(undefined, "am_notakey", "Bearer", "am_\u00e9\u00e9"), weight: 1 }
  )
  const jsonBody = fc.oneof(
    { arbitrary: inputs.map((v) => JSON.stringify(v) as string | Uint8Array), weight: 8 },
    { arbitrary: pick(HOSTILE_BODIES), weight: 1 }
  )
  return fc.tuple(route, key, inputs, jsonBody, fc.integer({ min: 0, max: 9 })).chain(([r, k, value, body, coin]) =>
    fc.record(Object.fromEntries((r.path.match(/:([a-z_]+)/g) ?? []).map((p) => [p.slice(1), paramOf(p.slice(1), world, r.method)]))).map((params) => {
      const path = r.path.replace(/:([a-z_]+)/g, (_, name: string) => params[name] ?? "x")
      const hasBody = (r.method === "POST" || r.method === "PATCH") && op.query === undefined
      const headers: Record<string, string> = {}
      if (op.access.kind === "member" && k !== undefined) headers["authorization"] = k === "Bearer" ? "Bearer" : `Bearer ${k}`
      if (op.raw !== undefined) return rawRequest(op, r.method, path, value, coin, world)
      if (!hasBody) {
        const query = queryOf(value)
        return { op: op.name, method: r.method, path: query === "" ? path : `${path}?${query}`, headers }
      }
      // Now and then a wrong content type, or none.
      if (coin === 0) headers["content-type"] = "text/plain"
      else if (coin !== 1) headers["content-type"] = "application/json"
      return { op: op.name, method: r.method, path, headers, body }
    })
  )
}

/** An operator route's request: a raw message, a signed provider event, or a billing webhook. */
const rawRequest = (op: Operation, method: string, path: string, value: Record<string, unknown>, coin: number, world: FuzzWorld): FuzzRequest => {
  if (op.name === "inbound.raw") {
    const to = coin < 8 ? (world.addresses[coin % world.addresses.length] ?? "nobody@example.org") : String(Object.values(value)[0] ?? "")
    const subject = String(Object.values(value).find((v) => typeof v === "string") ?? "fuzz")
    const raw = `From: Fuzz <fuzz@example.net>\r\nTo: ${to}\r\nSubject: ${subject.replace(/[\r\n]/g, " ")}\r\nMessage-ID: <fuzz-${coin}-${subject.length}@example.net>\r\n\r\n${subject}\r\n`
    const headers: Record<string, string> = { "content-type": "message/rfc822" }
    if (coin !== 9) headers["x-inbound-secret"] = world.inboundSecret
    return { op: op.name, method, path: `${path}?to=${encodeAny(to)}`, headers, body: Buffer.from(raw.toWellFormed(), "utf8") }
  }
  const body = JSON.stringify(coin < 5 ? { type: "delivered", rfc_message_id: "<fuzz@example.org>", recipients: ["x@example.org"], ...value } : value)
  const id = `fuzz_${coin}_${body.length}`
  const timestamp = String(world.now())
  return {
    op: op.name,
    method,
    path,
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": timestamp,
      "webhook-signature": coin === 9 ? "v1,bm90IGEgc2lnbmF0dXJl" : signWebhook(world.providerSecret, id, timestamp, Buffer.from(body))
    },
    body
  }
}

/** Requests across every operation of the catalogue, each operation as likely as another. */
export const apiRequests = (world: FuzzWorld): fc.Arbitrary<FuzzRequest> =>
  // The local operator's operations have no route: nothing reaches them over the wire.
  fc.oneof(...operations.filter((op) => op.routes.length > 0).map((op) => requestsFor(op, world)))

/** `count` requests from `seed`, in batches (each batch its own seed, so memory stays small). */
export function* generateRequests(world: FuzzWorld, seed: number, count: number, batch = 500): Generator<FuzzRequest> {
  const arbitrary = apiRequests(world)
  for (let done = 0, round = 0; done < count; round++) {
    const n = Math.min(batch, count - done)
    for (const request of fc.sample(arbitrary, { seed: seed + round, numRuns: n })) yield request
    done += n
  }
}

/** A request with `"\ud800"` in every string field of the operation's input: none may be a 5xx. */
export const surrogateRequest = (op: Operation, key: string): FuzzRequest & { readonly fields: ReadonlyArray<string> } => {
  const schema = inputJsonSchema(op) as unknown as Schema
  const defs = isObject(schema["$defs"]) ? schema["$defs"] : {}
  const fill = (node: Schema, name: string, depth: number): unknown => {
    const ref = node["$ref"]
    if (typeof ref === "string") {
      const target = defs[ref.replace(/^#\/\$defs\//, "")]
      return isObject(target) && depth < 6 ? fill(target, name, depth + 1) : "\ud800"
    }
    const options = node["anyOf"] ?? node["oneOf"]
    if (Array.isArray(options)) {
      const option = options.filter(isObject).find((o) => o["type"] === "string" || o["type"] === "array" || o["type"] === "object") ?? options[0]
      return isObject(option) ? fill(option, name, depth + 1) : "\ud800"
    }
    switch (node["type"]) {
      case "array":
        return [fill(isObject(node["items"]) ? node["items"] : {}, name, depth + 1)]
      case "object": {
        const properties = isObject(node["properties"]) ? node["properties"] : undefined
        if (properties !== undefined) return Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, isObject(v) ? fill(v, k, depth + 1) : "\ud800"]))
        return { key: isObject(node["additionalProperties"]) ? fill(node["additionalProperties"], name, depth + 1) : "\ud800" }
      }
      case "integer":
      case "number":
        return 1
      case "boolean":
        return true
      default:
        return "\ud800"
    }
  }
  const value = fill(schema, "", 0) as Record<string, unknown>
  // The top-level fields that hold the surrogate somewhere.
  const fields = Object.keys(value).filter((k) => JSON.stringify(value[k]).includes("\\ud800"))
  const route = op.routes[0]!
  const path = route.path.replace(/:([a-z_]+)/g, "x1")
  const headers: Record<string, string> = { authorization: `Bearer ${key}` }
  const hasBody = (route.method === "POST" || route.method === "PATCH") && op.query === undefined
  if (hasBody) return { op: op.name, method: route.method, path, headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(value), fields }
  // A query cannot carry an unpaired surrogate (URLs are UTF-8): the value arrives as U+FFFD.
  const query = queryOf(value)
  return { op: op.name, method: route.method, path: query === "" ? path : `${path}?${query}`, headers, fields }
}

/** How the world builder and the runners talk to a server: in process or over HTTP. */
export type FuzzClient = (request: FuzzRequest) => Promise<{ readonly status: number; readonly body: any }>

const json = (op: string, method: string, path: string, key: string, body?: unknown): FuzzRequest => ({
  op,
  method,
  path,
  headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

/**
 * A world to aim at, made over the API with two organizations' keys (`key`: the one most
 * requests use; `foreignKey`: another organization's): pods, inboxes, narrower keys,
 * delivered mail with an attachment, a thread, a draft, a webhook, list entries.
 */
export const buildFuzzWorld = async (
  client: FuzzClient,
  options: { readonly key: string; readonly foreignKey: string; readonly inboundSecret: string; readonly providerSecret: string; readonly now: () => number }
): Promise<FuzzWorld> => {
  const { key } = options
  const must = async (request: FuzzRequest, field?: string) => {
    const res = await client(request)
    if (res.status >= 300) throw new Error(`fuzz world: ${request.method} ${request.path} answered ${res.status} ${JSON.stringify(res.body)}`)
    return field === undefined ? res.body : res.body?.[field]
  }
  const pod = await must(json("pods.create", "POST", "/v0/pods", key, { name: "fuzz" }), "pod_id") as string
  const inbox = await must(json("inboxes.create", "POST", `/v0/pods/${pod}/inboxes`, key, { username: `fuzz-${options.now()}` })) as { inbox_id: string; email: string }
  const other = await must(json("inboxes.create", "POST", `/v0/pods/${pod}/inboxes`, key, {})) as { inbox_id: string; email: string }
  const podKey = await must(json("apiKeys.create", "POST", "/v0/api-keys", key, { name: "pod", pod_id: pod }), "api_key") as string
  const inboxKey = await must(json("apiKeys.create", "POST", "/v0/api-keys", key, { name: "inbox", inbox_id: inbox.inbox_id }), "api_key") as string
  const readKey = await must(json("apiKeys.create", "POST", "/v0/api-keys", key, { name: "read", permissions: ["inbox_read", "message_read", "thread_read"] }), "api_key") as string
  const spareKey = await must(json("apiKeys.create", "POST", "/v0/api-keys", key, { name: "spare" }), "api_key_id") as string
  const raw = [
    "From: Ann <ann@example.net>",
    `To: ${inbox.email}`,
    "Subject: fuzz world",
    "Message-ID: <fuzz-world@example.net>",
    "MIME-Version: 1.0",
    "Content-Type: multipart/mixed; boundary=b",
    "",
    "--b",
    "Content-Type: text/plain",
    "",
    "hello",
    "--b",
    "Content-Type: text/plain; name=a.txt",
    "Content-Disposition: attachment; filename=a.txt",
    "",
    "attached",
    "--b--",
    ""
  ].join("\r\n")
  const delivered = await must({
    op: "inbound.raw",
    method: "POST",
    path: `/inbound/raw?to=${encodeURIComponent(inbox.email)}`,
    headers: { "x-inbound-secret": options.inboundSecret, "content-type": "message/rfc822" },
    body: Buffer.from(raw)
  }) as { delivered: ReadonlyArray<{ message_id: string; thread_id: string }> }
  const message = delivered.delivered[0]!
  const full = await must(json("messages.get", "GET", `/v0/inboxes/${inbox.inbox_id}/messages/${encodeURIComponent(message.message_id)}`, key)) as {
    attachments?: ReadonlyArray<{ attachment_id: string }>
  }
  const draft = await must(json("drafts.create", "POST", `/v0/inboxes/${inbox.inbox_id}/drafts`, key, { to: "someone@example.net", text: "fuzz" }), "draft_id") as string
  const webhook = await must(json("webhooks.create", "POST", "/v0/webhooks", key, { url: "https://93.184.215.14/fuzz" }), "webhook_id") as string
  await must(json("lists.create", "POST", "/v0/lists/send/block", key, { entry: "blocked@example.net" }))
  return {
    keys: [key, podKey, inboxKey, readKey, options.foreignKey],
    ids: {
      pod_id: [pod],
      inbox_id: [inbox.inbox_id, other.inbox_id],
      message_id: [message.message_id],
      thread_id: [message.thread_id],
      attachment_id: (full.attachments ?? []).map((a) => a.attachment_id),
      draft_id: [draft],
      webhook_id: [webhook],
      api_key_id: [spareKey],
      domain_id: ["example.org"],
      direction: ["send", "receive", "reply"],
      type: ["allow", "block"],
      entry: ["blocked@example.net", "example.net"],
      address: ["blocked@example.net"],
      token: ["x"],
      file: ["x.gif"]
    },
    addresses: [inbox.email, other.email],
    inboundSecret: options.inboundSecret,
    providerSecret: options.providerSecret,
    now: options.now
  }
}

export interface FuzzOutcome {
  readonly requests: number
  /** Answers per status, and per operation for the statuses that fail the run. */
  readonly statuses: ReadonlyMap<number, number>
  readonly failures: ReadonlyArray<{ readonly request: FuzzRequest; readonly status: number; readonly body: unknown }>
}

/**
 * The statuses a fuzzed request may get: anything but a 500, and only the documented 5xx (an
 * error body with its code, or `/ready`'s own not-ready answer).
 */
export const acceptable = (status: number, body: any): boolean =>
  status < 500 ||
  ((status === 502 || status === 503) && typeof body?.code === "string" && body.code !== "internal_error") ||
  (status === 503 && body?.status === "not_ready")

/** Runs `count` requests from `seed` through `client`, `concurrency` at a time. */
export const runFuzz = async (
  client: FuzzClient,
  world: FuzzWorld,
  options: { readonly seed: number; readonly count: number; readonly concurrency?: number; readonly onProgress?: (done: number) => void }
): Promise<FuzzOutcome> => {
  const statuses = new Map<number, number>()
  const failures: Array<{ request: FuzzRequest; status: number; body: unknown }> = []
  const requests = generateRequests(world, options.seed, options.count)
  let done = 0
  const worker = async () => {
    for (let next = requests.next(); !next.done; next = requests.next()) {
      const request = next.value
      const res = await client(request).catch((error: unknown) => ({ status: 599, body: { code: "client_error", message: String(error) } }))
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      if (!acceptable(res.status, res.body)) failures.push({ request, status: res.status, body: res.body })
      if (++done % 1000 === 0) options.onProgress?.(done)
    }
  }
  await Promise.all(Array.from({ length: options.concurrency ?? 1 }, worker))
  return { requests: done, statuses, failures }
}
