/**
 * The WebSocket (spec: WebSocket; docs/events.md, "WebSocket") with the `ws` client and the
 * official agentmail SDK's WebSocket client against a real loopback server: the key in the
 * header or `?api_key=`, subscribe and the `subscribed` echo, event frames filtered by the
 * subscription and the key's scope and permissions, error frames for bad or forbidden
 * subscriptions.
 */
import { assert, layer } from "@effect/vitest"
import { deliverMailOverHttp, LoopbackServer, loopbackServer, newOrganization, storages, TEST_INBOUND_SECRET } from "@inbox/testkit"
import { AgentMailClient } from "agentmail"
import { Effect } from "effect"
import WebSocket from "ws"
import { KEY_ENDED_CLOSE, SLOW_CONSUMER_CLOSE } from "../src/websocket.ts"

interface Client {
  readonly frames: Array<any>
  send(frame: unknown): void
  /** Waits until a frame matching `match` has arrived (or fails after a while). */
  next(match: (frame: any) => boolean): Effect.Effect<any>
}

const waitFor = <A>(find: () => A | undefined, what: string) =>
  Effect.promise(async () => {
    for (let i = 0; i < 500; i++) {
      const found = find()
      if (found !== undefined) return found
      await new Promise((r) => setTimeout(r, 20))
    }
    throw new Error(`timed out waiting for ${what}`)
  })

const connect = (url: string, options: { readonly key?: string; readonly header?: string } = {}) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Client & { ws: WebSocket }>((resolve, reject) => {
        const target = `${url.replace(/^http/, "ws")}/v0/websocket${options.key === undefined ? "" : `?api_key=${options.key}`}`
        const ws = new WebSocket(target, options.header === undefined ? {} : { headers: { authorization: `Bearer ${options.header}` } })
        const frames: Array<any> = []
        ws.on("message", (data) => frames.push(JSON.parse(String(data))))
        ws.on("open", () =>
          resolve({
            ws,
            frames,
            send: (frame) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame)),
            next: (match) => waitFor(() => frames.find(match), "a frame")
          }))
        ws.on("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)))
        ws.on("error", reject)
      })
    ),
    (c) => Effect.sync(() => c.ws.close())
  )

const setUp = Effect.gen(function*() {
  const { url } = yield* LoopbackServer
  const org = yield* newOrganization()
  const post = (path: string, json: unknown) =>
    Effect.promise(async () => {
      const res = await fetch(`${url}${path}`, { method: "POST", headers: { authorization: `Bearer ${org.key}`, "content-type": "application/json" }, body: JSON.stringify(json) })
      // Test helper: the body is read field by field and each field asserted, so it stays untyped.
      return await res.json() as any
    })
  const pod = (yield* post("/v0/pods", { name: "P" })).pod_id as string
  const inbox = yield* post(`/v0/pods/${pod}/inboxes`, {})
  const other = yield* post("/v0/inboxes", {})
  return { url, ...org, post, podId: pod, inboxId: inbox.inbox_id as string, email: inbox.email as string, otherEmail: other.email as string }
})

for (const storage of storages()) {
  layer(loopbackServer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }), { timeout: "120 seconds", excludeTestServices: true })(
    `WebSocket (${storage.name})`,
    (it) => {
      it.effect("subscribe is echoed as subscribed, then events arrive as {type: event, ...envelope} frames (key in ?api_key=)", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const client = yield* connect(w.url, { key: w.key })
          client.send({ type: "subscribe", event_types: ["message.received"], inbox_ids: [w.inboxId] })
          const subscribed = yield* client.next((f) => f.type === "subscribed")
          assert.deepStrictEqual(subscribed, { type: "subscribed", event_types: ["message.received"], inbox_ids: [w.inboxId] })
          yield* deliverMailOverHttp(w.url, w.otherEmail, { subject: "not subscribed" })
          yield* deliverMailOverHttp(w.url, w.email, { subject: "live" })
          const event = yield* client.next((f) => f.type === "event")
          assert.strictEqual(event.event_type, "message.received")
          assert.strictEqual(event.inbox_id, w.inboxId)
          assert.strictEqual(event.message.subject, "live")
          // The same envelope as the events list.
          // Untyped JSON, asserted field by field below.
          const listed = yield* Effect.promise(async () => (await (await fetch(`${w.url}/v0/events?limit=1`, { headers: { authorization: `Bearer ${w.key}` } })).json()) as any)
          assert.deepStrictEqual(event, listed.events[0])
          assert.lengthOf(client.frames.filter((f) => f.type === "event"), 1)
        }).pipe(Effect.scoped))

      it.effect("the key in the Authorization header; a missing or unknown key is refused before the upgrade (401), a key without message_read 403", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const client = yield* connect(w.url, { header: w.key })
          client.send({ type: "subscribe" })
          assert.deepStrictEqual(yield* client.next((f) => f.type === "subscribed"), { type: "subscribed" })
          // The status of the refused upgrade, as the ws client sees it.
          const status = (key?: string) =>
            Effect.promise(() =>
              new Promise<number>((resolve) => {
                const ws = new WebSocket(`${w.url.replace(/^http/, "ws")}/v0/websocket${key === undefined ? "" : `?api_key=${key}`}`)
                ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0))
                ws.on("open", () => resolve(101))
                ws.on("error", () => undefined)
              })
            )
          assert.strictEqual(yield* status(), 401)
          assert.strictEqual(yield* status("am_0000"), 401)
          const noRead = (yield* w.post("/v0/api-keys", { name: "no read", permissions: ["inbox_read"] })).api_key
          assert.strictEqual(yield* status(noRead), 403)
        }).pipe(Effect.scoped))

      it.effect("a bad frame or a forbidden subscription gets {type: error, name, message}; the connection stays usable", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const reader = (yield* w.post("/v0/api-keys", { name: "reader", permissions: ["message_read"] })).api_key
          const client = yield* connect(w.url, { key: reader })
          client.send("not json")
          const bad = yield* client.next((f) => f.type === "error")
          assert.strictEqual(bad.name, "ValidationError")
          assert.isString(bad.message)
          client.send({ type: "subscribe", event_types: ["message.received.spam"] })
          yield* waitFor(() => client.frames.filter((f) => f.type === "error").length === 2 ? true : undefined, "a second error")
          assert.strictEqual(client.frames.filter((f) => f.type === "error")[1].name, "ForbiddenError")
          const stranger = yield* newOrganization()
          const foreign = yield* connect(w.url, { key: stranger.key })
          foreign.send({ type: "subscribe", inbox_ids: [w.inboxId] })
          assert.strictEqual((yield* foreign.next((f) => f.type === "error")).name, "NotFoundError")
          client.send({ type: "subscribe", event_types: ["message.received"] })
          yield* client.next((f) => f.type === "subscribed")
        }).pipe(Effect.scoped))

      it.effect("a client frame larger than 1 MiB closes the connection with 1009 (message too big)", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const client = yield* connect(w.url, { key: w.key })
          const closed = Effect.promise(() => new Promise<number>((resolve) => client.ws.once("close", (code) => resolve(code))))
          client.send(" ".repeat(1024 * 1024 + 1))
          assert.strictEqual(yield* closed, 1009)
        }).pipe(Effect.scoped))

      it.effect("a subscription with pod_ids gets the events of those pods only", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const client = yield* connect(w.url, { key: w.key })
          client.send({ type: "subscribe", event_types: ["message.received"], pod_ids: [w.podId] })
          assert.deepStrictEqual(yield* client.next((f) => f.type === "subscribed"), { type: "subscribed", event_types: ["message.received"], pod_ids: [w.podId] })
          yield* deliverMailOverHttp(w.url, w.otherEmail, { subject: "another pod" })
          yield* deliverMailOverHttp(w.url, w.email, { subject: "this pod" })
          const event = yield* client.next((f) => f.type === "event")
          assert.strictEqual(event.message.subject, "this pod")
          assert.strictEqual(event.pod_id, w.podId)
          assert.lengthOf(client.frames.filter((f) => f.type === "event"), 1)
        }).pipe(Effect.scoped))

      it.effect("scope and opt-in permissions apply as for the list: another organization's events and opt-in types without permission never arrive", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const reader = (yield* w.post("/v0/api-keys", { name: "reader", permissions: ["message_read"] })).api_key
          const stranger = yield* newOrganization()
          const mine = yield* connect(w.url, { key: reader })
          const theirs = yield* connect(w.url, { key: stranger.key })
          mine.send({ type: "subscribe" })
          theirs.send({ type: "subscribe" })
          yield* mine.next((f) => f.type === "subscribed")
          yield* theirs.next((f) => f.type === "subscribed")
          yield* deliverMailOverHttp(w.url, w.email, { subject: "spam" }, { "x-spam-verdict": "spam" })
          yield* deliverMailOverHttp(w.url, w.email, { subject: "ham" })
          const event = yield* mine.next((f) => f.type === "event")
          assert.strictEqual(event.message.subject, "ham")
          assert.lengthOf(mine.frames.filter((f) => f.type === "event"), 1)
          assert.lengthOf(theirs.frames.filter((f) => f.type === "event"), 0)
        }).pipe(Effect.scoped))

      it.effect("a slow consumer is bounded: past WS_BUFFER_BYTES unsent it is closed with code 4008, while a reading subscriber gets every event", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const slow = yield* connect(w.url, { key: w.key })
          const reading = yield* connect(w.url, { key: w.key })
          for (const c of [slow, reading]) {
            c.send({ type: "subscribe", event_types: ["message.received"], inbox_ids: [w.inboxId] })
            yield* c.next((f) => f.type === "subscribed")
          }
          let closeCode: number | undefined
          slow.ws.on("close", (code) => {
            closeCode = code
          })
          // The slow client stops reading: its kernel buffers fill, then the server's.
          const tcp = (slow.ws as unknown as { _socket: import("node:net").Socket })._socket
          tcp.pause()
          // Frames of about 600 KB (the text twice: text and extracted_text), 24 MB in all:
          // more than the kernel holds for a peer that does not read, plus WS_BUFFER_BYTES.
          const events = 40
          for (let i = 0; i < events; i++) {
            const text = `${i} `.padEnd(300_000, "lorem ipsum dolor sit amet ")
            const sent = yield* deliverMailOverHttp(w.url, w.email, { subject: `big ${i}`, text })
            assert.strictEqual(sent.status, 200)
          }
          yield* waitFor(() => reading.frames.filter((f) => f.type === "event").length === events ? true : undefined, "every event at the reading client")
          assert.isUndefined(closeCode)
          tcp.resume()
          yield* waitFor(() => closeCode, "the slow client's close")
          assert.strictEqual(closeCode, SLOW_CONSUMER_CLOSE)
          const got = slow.frames.filter((f) => f.type === "event").length
          assert.isAbove(got, 0)
          assert.isBelow(got, events)
          assert.strictEqual(reading.ws.readyState, WebSocket.OPEN)
        }).pipe(Effect.scoped))

      it.effect("a connection whose key is revoked is closed with 4001 and gets no more events", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const made = yield* w.post("/v0/api-keys", { name: "live", permissions: ["message_read"] })
          const client = yield* connect(w.url, { key: made.api_key })
          let closeCode: number | undefined
          client.ws.on("close", (code) => {
            closeCode = code
          })
          client.send({ type: "subscribe", event_types: ["message.received"] })
          yield* client.next((f) => f.type === "subscribed")
          yield* deliverMailOverHttp(w.url, w.email, { subject: "before" })
          yield* client.next((f) => f.type === "event")
          const revoked = yield* Effect.promise(() =>
            fetch(`${w.url}/v0/api-keys/${made.api_key_id}`, { method: "DELETE", headers: { authorization: `Bearer ${w.key}` } }))
          assert.strictEqual(revoked.status, 204)
          yield* waitFor(() => closeCode, "the close")
          assert.strictEqual(closeCode, KEY_ENDED_CLOSE)
          yield* deliverMailOverHttp(w.url, w.email, { subject: "after" })
          assert.lengthOf(client.frames.filter((f) => f.type === "event"), 1)
        }).pipe(Effect.scoped))

      it.effect("the official agentmail SDK's WebSocket client subscribes and receives an event", () =>
        Effect.gen(function*() {
          const w = yield* setUp
          const client = new AgentMailClient({ apiKey: w.key, environment: { http: w.url, websockets: w.url.replace(/^http/, "ws") } })
          const socket = yield* Effect.acquireRelease(
            Effect.promise(() => client.websockets.connect({ apiKey: w.key })),
            (s) => Effect.sync(() => s.close())
          )
          const received: Array<any> = []
          socket.on("message", (m: unknown) => received.push(m))
          yield* Effect.promise(() => socket.waitForOpen())
          socket.sendSubscribe({ type: "subscribe", eventTypes: ["message.received"] } as never)
          yield* waitFor(() => received.find((m) => m.type === "subscribed"), "subscribed")
          yield* deliverMailOverHttp(w.url, w.email, { subject: "sdk" })
          const event = yield* waitFor(() => received.find((m) => m.type === "event"), "an event")
          assert.strictEqual(event.eventType, "message.received")
          assert.strictEqual(event.message.subject, "sdk")
        }).pipe(Effect.scoped))
    }
  )
}
