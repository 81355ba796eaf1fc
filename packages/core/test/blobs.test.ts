/**
 * Blob storage: the BlobStore contract against every store (memory, files, PostgreSQL on
 * PGlite and on a server, S3 on s3rver), reference counting through the messages
 * triggers with a real store on both databases, the sweeper (its race with a transaction
 * re-referencing the bytes, and its schedule), and download tokens.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Blobs, BlobStore, BlobStores, contentDisposition, downloadOf, Ids, Inboxes, Organizations, type Principal, safeContentType, sha256Of } from "@inbox/core/internal"
import { blobStoreContract, distinctBytes, engineLayer, layerFilesInTemp, layerMemory, S3Server, storages, TempDir } from "@inbox/testkit"
import { ConfigProvider, Context, Deferred, Effect, Fiber, Layer, Option, Ref, Stream } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import { parseBlobUrl } from "../src/blobs/s3.ts"
import { openDownload, signDownload } from "../src/blobs/tokens.ts"

const filesIn = (dir: string, sha256: string) => {
  try {
    return readdirSync(join(dir, "blobs", sha256.slice(0, 2), sha256.slice(2, 4))).filter((f) => f === sha256 || f.endsWith(".tmp")).length
  } catch {
    return 0
  }
}

/** Files (the blob and any temporary file) in the store's folder for a hash. */
const fileCopies = (sha256: string) => TempDir.useSync((dir) => filesIn(dir.path, sha256))

const rowCopies = (sha256: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM blob_data WHERE sha256 = ${sha256}`
    return rows[0]?.n ?? 0
  }).pipe(Effect.orDie)

const memoryCopies = (sha256: string) => BlobStore.use((store) => Effect.map(store.has(sha256), (has) => has ? 1 : 0))

blobStoreContract({ name: "memory", layer: layerMemory, copies: memoryCopies })

blobStoreContract({ name: "files", layer: layerFilesInTemp, copies: fileCopies })

for (const storage of storages()) {
  blobStoreContract({
    name: `PostgreSQL store (${storage.name})`,
    layer: BlobStores.layerPostgres.pipe(Layer.provideMerge(storage.layer)),
    copies: rowCopies
  })
}

const s3Layer = (prefix: string) =>
  Layer.unwrap(S3Server.useSync((server) => BlobStores.layerS3(server.url.replace("s3://blobs?", `s3://blobs/${prefix}?`)))).pipe(
    Layer.provideMerge(S3Server.layer)
  )

blobStoreContract({
  name: "S3 (s3rver on loopback)",
  layer: s3Layer("mail"),
  copies: (sha256) => S3Server.use((server) => Effect.map(server.keys(`mail/${sha256}`), (keys) => keys.length)),
  presigns: true
})

// --- Reference counting, with a real store, on both databases -------------------------

const owner = (organizationId: string): Principal => ({ organizationId, scope: { type: "organization" } })

/** An organization on the Scale plan (room for five inboxes), its default pod and `n` inboxes. */
const tenant = (n: number) =>
  Effect.gen(function*() {
    const { organization, defaultPodId } = yield* (yield* Organizations).create({ ownerEmail: "blobs@example.com", verified: true, plan: "scale" })
    const service = yield* Inboxes
    const inboxes = yield* Effect.forEach(Array.from({ length: n }), () => service.create(owner(organization.id), {}, defaultPodId))
    return { organizationId: organization.id, podId: defaultPodId, inboxIds: inboxes.map((i) => i.inbox_id) }
  }).pipe(Effect.orDie)

interface Ref256 {
  readonly sha256: string
  readonly size: number
}

/**
 * Inserts a thread and a message row directly (there is no messages service on this
 * branch): the columns of migration 0002, the raw bytes and attachments by hash. The
 * trigger takes the references.
 */
const insertMessage = (where: { organizationId: string; podId: string; inboxId: string }, raw: Ref256, attachments: ReadonlyArray<Ref256> = []) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const messageId = yield* ids.make("msg")
    const threadId = yield* ids.make("thr")
    const at = new Date("2026-01-01T00:00:00.000Z")
    yield* sql`INSERT INTO threads (id, organization_id, pod_id, inbox_id, subject, preview, senders, recipients, labels,
        last_message_id, message_count, size, last_at, hidden, created_at, updated_at)
      VALUES (${threadId}, ${where.organizationId}, ${where.podId}, ${where.inboxId}, 'Hello', 'Hello', ${["a@example.org"]},
        ${["b@inbox.localhost"]}, ${["received"]}, ${messageId}, 1, ${raw.size}, ${at}, false, ${at}, ${at})`
    const attachmentJson = attachments.map((a, i) => ({
      attachment_id: `att_${i}`,
      content_type: "application/octet-stream",
      content_disposition: "attachment",
      size: a.size,
      sha256: a.sha256
    }))
    yield* sql`INSERT INTO messages (id, organization_id, pod_id, inbox_id, thread_id, direction, state, rfc_message_id,
        parents, labels, "timestamp", sender, sender_address, recipients, recipient_addresses, subject, preview, size,
        headers, attachments, raw_sha256, created_at, updated_at)
      VALUES (${messageId}, ${where.organizationId}, ${where.podId}, ${where.inboxId}, ${threadId}, 'received', 'stored',
        ${`<${messageId}@example.org>`}, ${[]}, ${["received"]}, ${at}, 'a@example.org', 'a@example.org',
        ${["b@inbox.localhost"]}, ${["b@inbox.localhost"]}, 'Hello', 'Hello', ${raw.size}, ${"{}"}::jsonb,
        ${JSON.stringify(attachmentJson)}::jsonb, ${raw.sha256}, ${at}, ${at})`
    return messageId
  }).pipe(Effect.orDie)

const deleteMessage = (messageId: string) =>
  SqlClient.SqlClient.use((sql) => sql`DELETE FROM messages WHERE id = ${messageId}`).pipe(Effect.asVoid, Effect.orDie)

const blobRow = (sha256: string) =>
  SqlClient.SqlClient.use((sql) => sql<{ refs: number; size: string | number }>`SELECT refs, size FROM blobs WHERE sha256 = ${sha256}`).pipe(
    Effect.map((rows) => rows[0] === undefined ? undefined : { refs: rows[0].refs, size: Number(rows[0].size) }),
    Effect.orDie
  )

const blob = (size: number, label: string) => {
  const bytes = distinctBytes(size, label)
  return { sha256: sha256Of(bytes), size, bytes }
}

/** Stores a message's bytes the documented way: rows first, then the bytes, in one transaction. */
const deliver = (where: ReadonlyArray<{ organizationId: string; podId: string; inboxId: string }>, raw: ReturnType<typeof blob>, attachments: ReadonlyArray<ReturnType<typeof blob>> = []) =>
  SqlClient.SqlClient.use((sql) =>
    sql.withTransaction(Effect.gen(function*() {
      const ids = yield* Effect.forEach(where, (w) => insertMessage(w, raw, attachments))
      yield* (yield* Blobs).store([raw, ...attachments])
      return ids
    }))
  ).pipe(Effect.orDie)

/** An unreferenced blob whose bytes are stored: a message delivered, then deleted. */
const orphan = (where: { organizationId: string; podId: string; inboxId: string }, label: string) =>
  Effect.gen(function*() {
    const raw = blob(2048, label)
    const [id] = yield* deliver([where], raw)
    yield* deleteMessage(id ?? "")
    assert.strictEqual((yield* blobRow(raw.sha256))?.refs, 0)
    return raw
  })

/** Blocks the store's `remove` until released, to hold a sweep inside its transaction. */
interface Gate {
  readonly entered: Deferred.Deferred<void>
  readonly release: Deferred.Deferred<void>
}

class RemoveGate extends Context.Service<RemoveGate, { readonly armed: Ref.Ref<Option.Option<Gate>> }>()("test/RemoveGate") {
  static readonly layer = Layer.effect(RemoveGate, Effect.map(Ref.make(Option.none<Gate>()), (armed) => RemoveGate.of({ armed })))
}

const gated = Layer.effect(BlobStore, Effect.gen(function*() {
  const store = yield* BlobStore
  const { armed } = yield* RemoveGate
  return BlobStore.of({
    ...store,
    remove: (sha256) =>
      Effect.gen(function*() {
        const gate = yield* Ref.getAndSet(armed, Option.none())
        if (Option.isSome(gate)) {
          yield* Deferred.succeed(gate.value.entered, undefined)
          yield* Deferred.await(gate.value.release)
        }
        yield* store.remove(sha256)
      })
  })
}))

/** Waits on the real clock until `check` holds (a few seconds at most). */
const eventually = <R>(check: Effect.Effect<boolean, never, R>, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      if (yield* check) return
      yield* Effect.sleep("25 millis")
    }
    assert.fail(`timed out waiting: ${what}`)
  })

const referenceCounting = <E, R>(
  name: string,
  store: Layer.Layer<BlobStore, E, R | SqlClient.SqlClient>,
  extra: Layer.Layer<R>,
  storage: (typeof storages extends () => ReadonlyArray<infer S> ? S : never),
  copies: (sha256: string) => Effect.Effect<number, never, R | SqlClient.SqlClient>,
  concurrent: boolean
) =>
  layer(
    engineLayer(storage.layer, {}, {}, gated.pipe(Layer.provide(store))).pipe(Layer.provideMerge(Layer.merge(extra, RemoveGate.layer))),
    { timeout: "180 seconds" }
  )(`reference counting: ${name} on ${storage.name}`, (it) => {
    it.effect("one raw message delivered to five inboxes is stored once, with five references", () =>
      Effect.gen(function*() {
        const t = yield* tenant(5)
        const raw = blob(50_000, "five")
        yield* deliver(t.inboxIds.map((inboxId) => ({ ...t, inboxId })), raw)
        assert.deepStrictEqual(yield* blobRow(raw.sha256), { refs: 5, size: 50_000 })
        assert.strictEqual(yield* copies(raw.sha256), 1)
        assert.strictEqual(sha256Of(yield* (yield* Blobs).readAll(raw.sha256)), raw.sha256)
      }))

    it.effect("deleting four messages leaves the bytes; deleting the last and sweeping removes them", () =>
      Effect.gen(function*() {
        const blobs = yield* Blobs
        const t = yield* tenant(5)
        const raw = blob(40_000, "last")
        const attachment = blob(9_000, "last-attachment")
        const ids = yield* deliver(t.inboxIds.map((inboxId) => ({ ...t, inboxId })), raw, [attachment])
        assert.strictEqual((yield* blobRow(attachment.sha256))?.refs, 5)
        for (const id of ids.slice(0, 4)) yield* deleteMessage(id)
        assert.strictEqual((yield* blobRow(raw.sha256))?.refs, 1)
        yield* blobs.sweep()
        assert.isTrue(yield* (yield* BlobStore).has(raw.sha256))
        yield* deleteMessage(ids[4] ?? "")
        assert.strictEqual((yield* blobRow(raw.sha256))?.refs, 0)
        // Unreferenced bytes stay until a sweep.
        assert.isTrue(yield* (yield* BlobStore).has(raw.sha256))
        assert.isAtLeast(yield* blobs.sweep(), 2)
        for (const b of [raw, attachment]) {
          assert.isFalse(yield* (yield* BlobStore).has(b.sha256))
          assert.isUndefined(yield* blobRow(b.sha256))
          assert.strictEqual(yield* copies(b.sha256), 0)
        }
      }))

    it.effect("deleting an inbox releases the references of its messages", () =>
      Effect.gen(function*() {
        const t = yield* tenant(2)
        const [kept, doomed] = t.inboxIds
        const shared = blob(30_000, "shared")
        const own = blob(20_000, "own")
        yield* deliver([{ ...t, inboxId: kept ?? "" }, { ...t, inboxId: doomed ?? "" }], shared)
        yield* deliver([{ ...t, inboxId: doomed ?? "" }], own, [blob(1000, "own-attachment")])
        yield* (yield* Inboxes).delete(owner(t.organizationId), doomed ?? "").pipe(Effect.orDie)
        assert.strictEqual((yield* blobRow(shared.sha256))?.refs, 1)
        assert.strictEqual((yield* blobRow(own.sha256))?.refs, 0)
        yield* (yield* Blobs).sweep()
        assert.isTrue(yield* (yield* BlobStore).has(shared.sha256))
        assert.isFalse(yield* (yield* BlobStore).has(own.sha256))
      }))

    it.effect("one statement writing many messages that share bytes counts one reference per message, skips attachments kept inside the raw, and one statement deleting them gives every reference back", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const t = yield* tenant(1)
        const raw = blob(3_000, "many-raw")
        const attachment = blob(1_000, "many-attachment")
        const inRaw = blob(500, "many-in-raw")
        const n = 300
        const attachments = JSON.stringify([
          { attachment_id: "att_0", content_type: "image/png", content_disposition: "inline", size: attachment.size, sha256: attachment.sha256 },
          { attachment_id: "att_1", content_type: "text/plain", content_disposition: "attachment", size: inRaw.size, sha256: inRaw.sha256, part: 1 }
        ])
        const prefix = (yield* (yield* Ids).make("msg")).slice(-12)
        const at = new Date("2026-01-01T00:00:00.000Z")
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO threads (id, organization_id, pod_id, inbox_id, subject, preview, senders, recipients, labels,
              last_message_id, message_count, size, last_at, hidden, created_at, updated_at)
            SELECT ${prefix} || 't' || i, ${t.organizationId}, ${t.podId}, ${t.inboxIds[0]!}, 'Hello', 'Hello', ${["a@example.org"]},
              ${["b@inbox.localhost"]}, ${["received"]}, ${prefix} || 'm' || i, 1, ${raw.size}, ${at}, false, ${at}, ${at}
            FROM generate_series(1, ${n}) AS i`
          yield* sql`INSERT INTO messages (id, organization_id, pod_id, inbox_id, thread_id, direction, state, rfc_message_id,
              parents, labels, "timestamp", sender, sender_address, recipients, recipient_addresses, subject, preview, size,
              headers, attachments, raw_sha256, created_at, updated_at)
            SELECT ${prefix} || 'm' || i, ${t.organizationId}, ${t.podId}, ${t.inboxIds[0]!}, ${prefix} || 't' || i, 'received', 'stored',
              '<' || ${prefix} || i || '@example.org>', ${[]}, ${["received"]}, ${at}, 'a@example.org', 'a@example.org',
              ${["b@inbox.localhost"]}, ${["b@inbox.localhost"]}, 'Hello', 'Hello', ${raw.size}, ${"{}"}::jsonb,
              ${attachments}::jsonb, ${raw.sha256}, ${at}, ${at}
            FROM generate_series(1, ${n}) AS i`
          yield* (yield* Blobs).store([raw, attachment])
        })).pipe(Effect.orDie)
        assert.deepStrictEqual(yield* blobRow(raw.sha256), { refs: n, size: raw.size })
        assert.deepStrictEqual(yield* blobRow(attachment.sha256), { refs: n, size: attachment.size })
        assert.isUndefined(yield* blobRow(inRaw.sha256))
        yield* sql`DELETE FROM messages WHERE id LIKE ${`${prefix}m%`}`.pipe(Effect.orDie)
        assert.strictEqual((yield* blobRow(raw.sha256))?.refs, 0)
        assert.strictEqual((yield* blobRow(attachment.sha256))?.refs, 0)
      }))

    if (!concurrent) return

    // PGlite is one session: there, transactions never interleave and the race cannot happen.
    it.effect("a sweep holding an unreferenced blob makes a re-referencing transaction wait, which then stores the bytes again", () =>
      TestClock.withLive(Effect.gen(function*() {
        const blobs = yield* Blobs
        const sql = yield* SqlClient.SqlClient
        const t = yield* tenant(1)
        const where = { ...t, inboxId: t.inboxIds[0] ?? "" }
        const raw = yield* orphan(where, "race-sweep-first")
        const gate = { entered: yield* Deferred.make<void>(), release: yield* Deferred.make<void>() }
        yield* Ref.set((yield* RemoveGate).armed, Option.some(gate))
        const sweep = yield* Effect.forkChild(blobs.sweep())
        yield* Deferred.await(gate.entered) // the sweep holds the row lock, about to remove the bytes
        const redeliver = yield* Effect.forkChild(deliver([where], raw))
        yield* eventually(
          Effect.map(
            sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO messages%'`.pipe(Effect.orDie),
            (rows) => (rows[0]?.n ?? 0) > 0
          ),
          "the re-referencing insert waits on the sweep's lock"
        )
        yield* Deferred.succeed(gate.release, undefined)
        yield* Fiber.join(sweep)
        yield* Fiber.join(redeliver)
        assert.strictEqual((yield* blobRow(raw.sha256))?.refs, 1)
        assert.isTrue(yield* (yield* BlobStore).has(raw.sha256))
        assert.strictEqual(sha256Of(yield* blobs.readAll(raw.sha256)), raw.sha256)
      })))

    it.effect("a sweep skips a blob that an open transaction is re-referencing, and never deletes its bytes", () =>
      TestClock.withLive(Effect.gen(function*() {
        const blobs = yield* Blobs
        const sql = yield* SqlClient.SqlClient
        const t = yield* tenant(1)
        const where = { ...t, inboxId: t.inboxIds[0] ?? "" }
        const raw = yield* orphan(where, "race-reference-first")
        const inserted = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const redeliver = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
          yield* insertMessage(where, raw)
          yield* Deferred.succeed(inserted, undefined)
          yield* Deferred.await(release)
          yield* blobs.store([raw])
        })).pipe(Effect.orDie))
        yield* Deferred.await(inserted) // refs is 1 in the open transaction, 0 for everyone else
        yield* blobs.sweep()
        assert.isTrue(yield* (yield* BlobStore).has(raw.sha256))
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(redeliver)
        yield* blobs.sweep()
        assert.strictEqual((yield* blobRow(raw.sha256))?.refs, 1)
        assert.isTrue(yield* (yield* BlobStore).has(raw.sha256))
      })))
  })

for (const storage of storages()) {
  const concurrent = storage.name !== "PGlite"
  referenceCounting(
    "files",
    Layer.unwrap(TempDir.useSync((dir) => BlobStores.layerFiles(dir.path))),
    TempDir.layer,
    storage,
    fileCopies,
    concurrent
  )
  referenceCounting("PostgreSQL store", BlobStores.layerPostgres, Layer.empty, storage, rowCopies, concurrent)
}

// --- The scheduled sweep ------------------------------------------------------------------

const [firstStorage] = storages()
if (firstStorage !== undefined) {
  layer(engineLayer(firstStorage.layer), { timeout: "120 seconds" })("the scheduled sweep", (it) => {
    it.effect("Blobs.layerSweeper sweeps at start, then once a minute", () =>
      Effect.gen(function*() {
        const t = yield* tenant(1)
        const where = { ...t, inboxId: t.inboxIds[0] ?? "" }
        const first = yield* orphan(where, "scheduled-1")
        yield* Layer.build(Blobs.layerSweeper)
        yield* TestClock.withLive(eventually(Effect.map(blobRow(first.sha256), (r) => r === undefined), "the first sweep"))
        const second = yield* orphan(where, "scheduled-2")
        yield* TestClock.adjust("59 seconds")
        yield* TestClock.withLive(Effect.sleep("300 millis"))
        assert.strictEqual((yield* blobRow(second.sha256))?.refs, 0, "no sweep before the minute is up")
        assert.isTrue(yield* (yield* BlobStore).has(second.sha256))
        yield* TestClock.adjust("1 second")
        yield* TestClock.withLive(eventually(Effect.map(blobRow(second.sha256), (r) => r === undefined), "the sweep a minute later"))
        assert.isFalse(yield* (yield* BlobStore).has(second.sha256))
      }).pipe(Effect.scoped))
  })
}

layer(engineLayer(storages()[0]!.layer, {}, {}, s3Layer("urls")), { timeout: "120 seconds" })("download URLs with S3 storage", (it) => {
  it.effect("a blob's URL is the store's presigned one; an attachment kept inside its raw message gets the server's signed URL naming the raw and the part", () =>
    Effect.gen(function*() {
      const blobs = yield* Blobs
      const sha = sha256Of(new Uint8Array([7, 8, 9]))
      const whole = yield* blobs.downloadUrl({ sha256: sha, contentType: "application/pdf" })
      assert.notInclude(new URL(whole.download_url).pathname, "/downloads/")
      const part = new URL((yield* blobs.downloadUrl({ sha256: sha, part: 2, contentType: "application/pdf", filename: "a.pdf" })).download_url)
      assert.match(part.pathname, /^\/downloads\/[A-Za-z0-9_-]{74}$/)
      const opened = yield* blobs.verifyDownload({
        token: part.pathname.slice("/downloads/".length),
        contentType: part.searchParams.get("content_type") ?? undefined,
        filename: part.searchParams.get("filename") ?? undefined
      })
      assert.deepStrictEqual(opened === undefined ? undefined : [opened.sha256, opened.part, opened.filename], [sha, 2, "a.pdf"])
    }))
})

// --- Download tokens and headers ----------------------------------------------------------

describe("download tokens", () => {
  const sha = sha256Of(new Uint8Array([1, 2, 3]))
  const target = { sha256: sha, contentType: "application/pdf", filename: "Résumé.pdf" }

  it("open what they sign, and nothing else: tampered, truncated, re-spelled, another name or type, another key", () => {
    const signed = signDownload("key-a", target, 2_000_000_000)
    assert.match(signed.token, /^[A-Za-z0-9_-]{71}$/)
    assert.deepStrictEqual(openDownload("key-a", signed), { target, expiresAtSeconds: 2_000_000_000 })
    assert.isUndefined(openDownload("key-b", signed))
    for (let i = 0; i < signed.token.length; i++) {
      const token = signed.token.slice(0, i) + (signed.token[i] === "A" ? "B" : "A") + signed.token.slice(i + 1)
      assert.isUndefined(openDownload("key-a", { ...signed, token }), `flipped at ${i}`)
    }
    for (const token of [signed.token.slice(0, -1), signed.token.slice(0, 40), `${signed.token}A`, `${signed.token}=`, "", "x".repeat(600)]) {
      assert.isUndefined(openDownload("key-a", { ...signed, token }), token)
    }
    assert.isUndefined(openDownload("key-a", { ...signed, contentType: "text/html" }))
    assert.isUndefined(openDownload("key-a", { ...signed, filename: "Resume.pdf" }))
    assert.isUndefined(openDownload("key-a", { token: signed.token, contentType: signed.contentType }))
    assert.isUndefined(openDownload("key-a", { token: signed.token, filename: "Résumé.pdf" }))
  })

  it("name an attachment kept inside a raw message by the raw's hash and the part, and open only as signed", () => {
    const partTarget = { ...target, part: 513 }
    const signed = signDownload("key-a", partTarget, 2_000_000_000)
    assert.match(signed.token, /^[A-Za-z0-9_-]{74}$/)
    assert.deepStrictEqual(openDownload("key-a", signed), { target: partTarget, expiresAtSeconds: 2_000_000_000 })
    assert.isUndefined(openDownload("key-b", signed))
    for (let i = 0; i < signed.token.length; i++) {
      const token = signed.token.slice(0, i) + (signed.token[i] === "A" ? "B" : "A") + signed.token.slice(i + 1)
      assert.isUndefined(openDownload("key-a", { ...signed, token }), `flipped at ${i}`)
    }
    // the blob's own token and the part's differ, and neither opens as the other
    const whole = signDownload("key-a", target, 2_000_000_000)
    assert.notStrictEqual(whole.token, signed.token)
    assert.notProperty(openDownload("key-a", whole)?.target, "part")
    assert.isUndefined(openDownload("key-a", { ...signed, token: signed.token.slice(0, 71) }))
  })

  it("sign the cleaned media type and file name, cut to 255 bytes keeping the extension", () => {
    const long = signDownload("k", { sha256: sha, contentType: "Text/Plain; name=x", filename: `${"ü".repeat(400)}.pdf` }, 1)
    assert.strictEqual(long.contentType, "text/plain")
    assert.match(long.filename ?? "", /^ü+\.pdf$/)
    assert.isAtMost(Buffer.byteLength(long.filename ?? ""), 255)
    const none = signDownload("k", { sha256: sha, contentType: "text/plain", filename: "\r\n" }, 1)
    assert.notProperty(none, "filename")
    assert.deepStrictEqual(openDownload("k", none)?.target, { sha256: sha, contentType: "text/plain" })
  })
})

describe("download headers", () => {
  const sha = sha256Of(new Uint8Array([4, 5, 6]))

  it("Content-Disposition is an attachment with an ASCII name and the exact name encoded (RFC 6266, 8187)", () => {
    assert.strictEqual(contentDisposition(undefined), "attachment")
    assert.strictEqual(contentDisposition("report.pdf"), `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`)
    assert.strictEqual(
      contentDisposition(`a"b\\c\r\nd;e=f%20'*.txt`),
      `attachment; filename="a_b_cd;e=f_20'*.txt"; filename*=UTF-8''a%22b_cd%3Be%3Df%2520%27%2A.txt`
    )
    assert.strictEqual(contentDisposition("../../etc/passwd"), `attachment; filename=".._.._etc_passwd"; filename*=UTF-8''.._.._etc_passwd`)
    assert.strictEqual(contentDisposition("日本語.txt"), `attachment; filename="___.txt"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E.txt`)
    assert.strictEqual(contentDisposition("bad\uD800.txt"), `attachment; filename="bad_.txt"; filename*=UTF-8''bad%EF%BF%BD.txt`)
    for (const nothing of ["", "   ", "\r\n", "..", "."]) assert.strictEqual(contentDisposition(nothing), "attachment")
  })

  it("the media type is a clean type/subtype (and charset), or application/octet-stream", () => {
    assert.strictEqual(safeContentType("text/HTML; charset=UTF-8; name=\"x.html\""), "text/html; charset=utf-8")
    assert.strictEqual(safeContentType("application/pdf; name=\"x.pdf\""), "application/pdf")
    assert.strictEqual(safeContentType("image/svg+xml"), "image/svg+xml")
    for (const bad of ["", "text", "text/html\r\nSet-Cookie: a=b", "a/b/c", "tëxt/plain", `x/${"y".repeat(120)}`]) {
      assert.strictEqual(safeContentType(bad), "application/octet-stream", bad)
    }
  })

  it("downloadOf streams from the store with every protective header", () => {
    const download = downloadOf({ read: () => Stream.empty }, { sha256: sha, contentType: "text/html", filename: "x.html", size: 5 })
    assert.strictEqual(download.contentType, "text/html")
    assert.strictEqual(download.size, 5)
    assert.deepStrictEqual(download.headers, {
      "content-disposition": `attachment; filename="x.html"; filename*=UTF-8''x.html`,
      "x-content-type-options": "nosniff",
      "content-security-policy": "sandbox",
      "cache-control": "private, no-store"
    })
  })
})

describe("INBOX_BLOB_URL", () => {
  it("names the bucket, prefix, endpoint, region and credentials; path-style with an endpoint", () => {
    assert.deepStrictEqual(
      parseBlobUrl("s3://mail/inbox/raw/?endpoint=http://127.0.0.1:9000&region=eu-west-1&access_key_id=AK&secret_access_key=SK"),
      {
        bucket: "mail",
        prefix: "inbox/raw/",
        endpoint: "http://127.0.0.1:9000",
        region: "eu-west-1",
        forcePathStyle: true,
        credentials: { accessKeyId: "AK", secretAccessKey: "SK" },
        presign: true
      }
    )
    assert.deepStrictEqual(parseBlobUrl("s3://mail?presign=false"), { bucket: "mail", prefix: "", forcePathStyle: false, presign: false })
    assert.strictEqual(parseBlobUrl("s3://mail?endpoint=https://s3.example.com").region, "us-east-1")
  })

  it("refuses a malformed URL without echoing its secrets", () => {
    for (const bad of ["http://mail", "s3://", "s3://mail?acess_key_id=x", "s3://mail?access_key_id=SECRETX", "s3://user:SECRETX@mail", "s3://mail?endpoint=ftp://x", "s3://mail?presign=maybe"]) {
      const error = (() => {
        try {
          parseBlobUrl(bad)
          return undefined
        } catch (e) {
          return e as Error
        }
      })()
      assert.instanceOf(error, Error, bad)
      assert.notInclude(error?.message ?? "", "SECRETX")
    }
  })
})

// --- Which store the settings pick --------------------------------------------------------

const pickedBy = (env: Record<string, string>) =>
  BlobStore.use((store) => Effect.succeed(store.name)).pipe(
    Effect.provide(BlobStores.layerConfig.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))),
    Effect.scoped
  )

if (firstStorage !== undefined) {
  layer(Layer.merge(firstStorage.layer, TempDir.layer), { timeout: "120 seconds" })("BlobStores.layerConfig", (it) => {
    it.effect("INBOX_BLOB_URL picks S3, else INBOX_DATABASE_URL PostgreSQL, else files under INBOX_DATA_DIR", () =>
      Effect.gen(function*() {
        const dir = (yield* TempDir).path
        const s3 = "s3://mail?endpoint=http://127.0.0.1:9&region=us-east-1"
        assert.strictEqual(yield* pickedBy({ INBOX_BLOB_URL: s3, INBOX_DATABASE_URL: "postgres://x/y", INBOX_DATA_DIR: dir }), "s3")
        assert.strictEqual(yield* pickedBy({ INBOX_DATABASE_URL: "postgres://x/y", INBOX_DATA_DIR: dir }), "postgres")
        assert.strictEqual(yield* pickedBy({ INBOX_BLOB_URL: "", INBOX_DATA_DIR: dir }), "files")
        assert.isTrue(existsSync(join(dir, "blobs")))
      }))
  })
}
