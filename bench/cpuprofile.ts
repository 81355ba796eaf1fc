/**
 * Reading a V8 `.cpuprofile` (node --cpu-prof) the way the request path's profile needs:
 * only the samples inside a time window (the load, not start-up or shutdown), then
 * - self time by function and by place (a package, or a folder of ours);
 * - inclusive time of named frames (each sample counts once per frame however deep it
 *   recurses), which is what "time spent under X" means.
 */
import { readFileSync } from "node:fs"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}
interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}
interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

export interface Share {
  readonly name: string
  readonly ms: number
  readonly percent: number
}

export interface Summary {
  readonly samples: number
  readonly ms: number
  readonly byFunction: ReadonlyArray<Share>
  readonly byPlace: ReadonlyArray<Share>
  readonly byBucket: ReadonlyArray<Share>
  readonly inclusive: ReadonlyArray<Share>
}

/** A package name (`effect`, `@effect/sql-pg`), a folder of ours (`core/src/apikeys`), or `node:*`/`(native)`. */
export const placeOf = (url: string): string => {
  if (url === "") return "(native or V8)"
  if (url.startsWith("node:")) return url.split("/")[0]!
  // The last node_modules of the path names the package (pnpm nests them under .pnpm).
  const pkg = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (pkg !== null) {
    // effect and the driver are most of the work: split them by module so their parts can be told apart.
    if (pkg[1] === "effect" || pkg[1] === "@effect/sql-pg") return url.replace(/.*node_modules\/(effect|@effect\/sql-pg)\/dist\//, "$1/")
    return pkg[1]!
  }
  const ours = /\/(packages\/[^/]+\/src(?:\/[^/]+)?|bench)\//.exec(url)
  if (ours !== null) return ours[1]!.replace(/\.ts$/, "")
  return url
}

/**
 * What a sample's own frame was doing, in the terms the request path's cost is argued in.
 * The Effect runtime runs every generator from its fiber loop, so "inclusive" time under
 * one of our functions is not recoverable from the stacks; these buckets of self time are.
 */
export const bucketOf = (f: CallFrame): string => {
  const { functionName: fn, url } = f
  if (url === "") {
    if (/^(writeBuffer|writev|writeUtf8String|writeLatin1String|writeAsciiString)$/.test(fn)) return "socket writes (system calls)"
    if (fn === "(garbage collector)") return "garbage collector"
    if (fn === "(program)") return "(program): V8 and libuv outside JS"
    return "other native (JSON, Date, hrtime, ...)"
  }
  if (url.startsWith("node:internal/crypto/random") || fn === "randomBytes") return "random bytes (request ids)"
  if (url.startsWith("node:internal/crypto/hash") || fn === "createHash") return "SHA-256 of the key"
  if (/node:internal\/(modules|source_map)|\/tsx\//.test(url)) return "module loading (start-up, tsx)"
  if (/\/effect\/dist\/internal\/tracer\.js|\/effect\/dist\/Tracer\.js/.test(url) || /Span/.test(fn) && url.includes("/effect/dist/")) {
    return "Effect spans and stack traces"
  }
  if (/\/effect\/dist\/Schema/.test(url)) return "Schema (row and input decoding)"
  if (url.includes("/@effect/sql-pg/") || url.includes("/effect/dist/sql/") || url.includes("/effect/dist/Pool.js")) {
    return "SQL client (effect/sql, Pool, @effect/sql-pg)"
  }
  if (url.includes("/effect/dist/http/") || url.includes("/@effect/platform-node")) return "Effect HTTP (router, request, response)"
  if (url.includes("/effect/dist/")) return "Effect runtime (fibers, context, combinators)"
  if (url.includes("/packages/")) return "our code (packages/*)"
  if (url.includes("/node_modules/pg") || url.includes("/node_modules/postgres-")) return "pg driver"
  if (url.startsWith("node:")) return "Node http, net, streams, events"
  return url.includes("/bench/") ? "our code (bench)" : "other JS"
}

const label = (f: CallFrame) => `${f.functionName || "(anonymous)"} ${placeOf(f.url)}:${f.lineNumber + 1}`

const shares = (map: Map<string, number>, total: number, top: number): ReadonlyArray<Share> =>
  [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, us]) => ({
    name,
    ms: Math.round(us / 1000),
    percent: Math.round((us / total) * 1000) / 10
  }))

/**
 * `window` is [from, to] in the profile's clock (microseconds of CLOCK_MONOTONIC, which
 * `process.hrtime` reads too, so another process can name it). `frames` maps a label to a
 * test on a frame, for inclusive time.
 */
export const summarise = (
  file: string,
  window: readonly [number, number] | undefined,
  frames: Record<string, (f: CallFrame) => boolean>,
  top = 30
): Summary => {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const self = new Map<string, number>()
  const place = new Map<string, number>()
  const bucket = new Map<string, number>()
  const inclusive = new Map<string, number>()
  let t = profile.startTime
  let total = 0
  let count = 0
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0
    // A sample's weight is the time until the next one.
    const weight = profile.timeDeltas[i + 1] ?? 0
    if (window !== undefined && (t < window[0] || t > window[1])) continue
    const node = byId.get(profile.samples[i]!)!
    const fn = node.callFrame.functionName
    if (fn === "(idle)") continue
    total += weight
    count++
    self.set(label(node.callFrame), (self.get(label(node.callFrame)) ?? 0) + weight)
    const p = fn === "(garbage collector)" || fn === "(program)" ? fn : placeOf(node.callFrame.url)
    place.set(p, (place.get(p) ?? 0) + weight)
    const b = bucketOf(node.callFrame)
    bucket.set(b, (bucket.get(b) ?? 0) + weight)
    const seen = new Set<string>()
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame
      for (const [name, test] of Object.entries(frames)) {
        if (!seen.has(name) && test(frame)) {
          seen.add(name)
          inclusive.set(name, (inclusive.get(name) ?? 0) + weight)
        }
      }
    }
  }
  return {
    samples: count,
    ms: Math.round(total / 1000),
    byFunction: shares(self, total, top),
    byPlace: shares(place, total, top),
    byBucket: shares(bucket, total, top),
    inclusive: shares(inclusive, total, Object.keys(frames).length)
  }
}

/** A markdown table; with `requests`, a column of microseconds per request too. */
export const table = (title: string, rows: ReadonlyArray<Share>, requests?: number) =>
  [
    `| ${title} | ms | % |${requests === undefined ? "" : " µs/request |"}`,
    `|---|---:|---:|${requests === undefined ? "" : "---:|"}`,
    ...rows.map((r) =>
      `| ${r.name.replaceAll("|", "\\|")} | ${r.ms} | ${r.percent} |${requests === undefined ? "" : ` ${Math.round((r.ms * 1000) / requests)} |`}`
    )
  ].join("\n")
