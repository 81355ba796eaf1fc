/**
 * The S3-compatible BlobStore (AWS S3, MinIO, Ceph, R2, ...), for deployments that outgrow
 * one database. Loaded only when configured (stores.ts `layerS3`), so other processes never
 * load the AWS SDK.
 *
 * INBOX_BLOB_URL: `s3://BUCKET[/PREFIX]?endpoint=URL&region=REGION&...`; parameters:
 * - `endpoint`: a custom S3 endpoint (omit for AWS); with one, requests use path-style
 *   addressing (`endpoint/bucket/key`), which every S3-compatible server understands;
 * - `region`: default `us-east-1` with a custom endpoint, else the AWS chain (AWS_REGION, ...);
 * - `access_key_id` and `secret_access_key` (and `session_token`): credentials given in the
 *   URL; without them the AWS SDK's standard chain is used (AWS_ACCESS_KEY_ID /
 *   AWS_SECRET_ACCESS_KEY, shared config files, web identity, instance or container roles),
 *   the better choice where it is available. The URL is read as a secret and never logged;
 * - `path_style`: `true`/`false` overrides the addressing style;
 * - `presign`: `false` serves downloads through the server's own signed URLs instead of
 *   presigned S3 URLs (when clients cannot reach the endpoint).
 * An unknown parameter or a malformed URL stops the server at start.
 *
 * Objects are named PREFIX + sha256. A put first asks whether the object exists (HEAD) and
 * uploads only when it does not: the bytes are immutable, and the same attachment arriving
 * again costs a request rather than an upload. S3 acknowledges a PUT once the object is
 * durable, and a reader sees the old state or the whole new object. Checksums are sent only
 * when an operation requires them, for compatibility with S3-compatible servers that
 * refuse the newer checksum headers. Any S3 error other than "no such object" is a defect.
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Clock, Effect, Layer, Stream } from "effect"
import type { Readable } from "node:stream"
import { BlobStore, checkSha256, notStored, putEach } from "./BlobStore.ts"
import { contentDisposition, safeContentType } from "./download.ts"

export interface S3Location {
  readonly bucket: string
  /** Prepended to every key; empty or ending in `/`. */
  readonly prefix: string
  readonly endpoint?: string
  readonly region?: string
  readonly forcePathStyle: boolean
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string }
  readonly presign: boolean
}

const PARAMETERS = ["endpoint", "region", "access_key_id", "secret_access_key", "session_token", "path_style", "presign"]

const flag = (name: string, value: string | null, fallback: boolean): boolean => {
  if (value === null) return fallback
  if (value === "true" || value === "1") return true
  if (value === "false" || value === "0") return false
  throw new Error(`INBOX_BLOB_URL: ${name} must be true or false`)
}

/** Reads INBOX_BLOB_URL. Errors name the part that is wrong, never a value (it may hold a secret). */
export const parseBlobUrl = (text: string): S3Location => {
  const url = URL.parse(text)
  if (url === null || url.protocol !== "s3:" || url.hostname === "") {
    throw new Error("INBOX_BLOB_URL must look like s3://bucket?endpoint=...&region=...")
  }
  if (url.username !== "" || url.password !== "") {
    throw new Error("INBOX_BLOB_URL: give credentials as access_key_id and secret_access_key parameters, not before the bucket")
  }
  const unknown = [...url.searchParams.keys()].filter((k) => !PARAMETERS.includes(k))
  if (unknown.length > 0) throw new Error(`INBOX_BLOB_URL: unknown parameter ${unknown.join(", ")} (known: ${PARAMETERS.join(", ")})`)
  const get = (name: string) => url.searchParams.get(name)
  const endpoint = get("endpoint") ?? undefined
  if (endpoint !== undefined && !/^https?:\/\//.test(endpoint)) throw new Error("INBOX_BLOB_URL: endpoint must be an http:// or https:// URL")
  const accessKeyId = get("access_key_id")
  const secretAccessKey = get("secret_access_key")
  if ((accessKeyId === null) !== (secretAccessKey === null)) {
    throw new Error("INBOX_BLOB_URL: give access_key_id and secret_access_key together, or neither")
  }
  const sessionToken = get("session_token")
  const path = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, "")
  const region = get("region") ?? (endpoint === undefined ? undefined : "us-east-1")
  return {
    bucket: decodeURIComponent(url.hostname),
    prefix: path === "" ? "" : `${path}/`,
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(region === undefined ? {} : { region }),
    forcePathStyle: flag("path_style", get("path_style"), endpoint !== undefined),
    ...(accessKeyId === null || secretAccessKey === null ? {} : {
      credentials: { accessKeyId, secretAccessKey, ...(sessionToken === null ? {} : { sessionToken }) }
    }),
    presign: flag("presign", get("presign"), true)
  }
}

const status = (error: unknown) => (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode

const isNoSuchObject = (error: unknown) => {
  const name = (error as { name?: unknown } | undefined)?.name
  return name === "NotFound" || name === "NoSuchKey" || status(error) === 404
}

export const layerS3 = (url: string | S3Location) =>
  Layer.effect(BlobStore, Effect.gen(function*() {
    const location = typeof url === "string" ? yield* Effect.try({ try: () => parseBlobUrl(url), catch: (e) => e }) : url
    // The SDK is loaded only when S3 is the store: it is half a second of every start otherwise.
    const [{ DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client }, { getSignedUrl }] = yield* Effect.promise(() =>
      Promise.all([import("@aws-sdk/client-s3"), import("@aws-sdk/s3-request-presigner")])
    )
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new S3Client({
          ...(location.endpoint === undefined ? {} : { endpoint: location.endpoint }),
          ...(location.region === undefined ? {} : { region: location.region }),
          ...(location.credentials === undefined ? {} : { credentials: location.credentials }),
          forcePathStyle: location.forcePathStyle,
          requestChecksumCalculation: "WHEN_REQUIRED",
          responseChecksumValidation: "WHEN_REQUIRED"
        })
      ),
      (c) => Effect.sync(() => c.destroy())
    )
    // Fail at start, not at the first message, when no region can be found.
    yield* Effect.tryPromise({
      try: () => client.config.region(),
      catch: () => new Error("INBOX_BLOB_URL: no region; add region=... or set AWS_REGION")
    })
    const Bucket = location.bucket
    const keyOf = (sha256: string) => `${location.prefix}${sha256}`
    const call = <A>(f: (signal: AbortSignal) => Promise<A>) => Effect.tryPromise({ try: f, catch: (error) => error })

    const size = (sha256: string) =>
      Effect.flatMap(checkSha256(sha256), (sha) =>
        call((abortSignal) => client.send(new HeadObjectCommand({ Bucket, Key: keyOf(sha) }), { abortSignal }))).pipe(
          Effect.map((head): number | undefined => head.ContentLength ?? 0),
          Effect.catchIf(isNoSuchObject, () => Effect.succeed(undefined)),
          Effect.orDie
        )

    const put = Effect.fn("BlobStore.s3.put")(function*(sha256: string, bytes: Uint8Array) {
      if ((yield* size(sha256)) !== undefined) return
      yield* call((abortSignal) =>
        client.send(
          new PutObjectCommand({ Bucket, Key: keyOf(sha256), Body: bytes, ContentLength: bytes.byteLength, ContentType: "application/octet-stream" }),
          { abortSignal }
        )
      ).pipe(Effect.orDie)
    })

    return BlobStore.of({
      name: "s3",
      put,
      putMany: putEach(put),
      get: (sha256) =>
        Stream.unwrap(Effect.gen(function*() {
          const sha = yield* checkSha256(sha256)
          const object = yield* call((abortSignal) => client.send(new GetObjectCommand({ Bucket, Key: keyOf(sha) }), { abortSignal })).pipe(
            Effect.catchIf(isNoSuchObject, () => Effect.die(notStored(sha))),
            Effect.orDie
          )
          // On Node the body is an http.IncomingMessage; it is destroyed when the stream ends or is interrupted.
          return NodeStream.fromReadable<Uint8Array, unknown>({ evaluate: () => object.Body as Readable, onError: (e) => e }).pipe(Stream.orDie)
        })),
      has: (sha256) => Effect.map(size(sha256), (n) => n !== undefined),
      size,
      // S3 answers 204 for a key that does not exist, so removing twice succeeds.
      remove: (sha256) =>
        Effect.flatMap(checkSha256(sha256), (sha) =>
          call((abortSignal) => client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(sha) }), { abortSignal }))).pipe(
            Effect.asVoid,
            Effect.orDie
          ),
      presign: Effect.fn("BlobStore.s3.presign")(function*(sha256, options) {
        if (!location.presign) return undefined
        const sha = yield* checkSha256(sha256)
        // Signed at the engine's clock, so the URL expires when expires_at says.
        const signingDate = new Date(yield* Clock.currentTimeMillis)
        return yield* call(() =>
          getSignedUrl(
            client,
            new GetObjectCommand({
              Bucket,
              Key: keyOf(sha),
              ResponseContentType: safeContentType(options.contentType),
              ResponseContentDisposition: contentDisposition(options.filename),
              ResponseCacheControl: `private, max-age=${options.expiresInSeconds}`
            }),
            { expiresIn: options.expiresInSeconds, signingDate }
          )
        ).pipe(Effect.orDie)
      })
    })
  }).pipe(Effect.orDie))
