/**
 * Open tracking (spec: Events `message.opened`; Errors `tracking_disabled`): the pixel URL
 * composed at send time is served as a 1x1 GIF with `Cache-Control: no-store`; the first
 * open emits `message.opened` once (`open_count`, `via_proxy` for known image proxies);
 * later opens count without a second event; the operator switch refuses `track_opens`.
 */
import { assert, layer } from "@effect/vitest"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"

const trackedSend = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization()
  const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body
  const sent = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, {
    key: org.key,
    json: { to: "reader@example.net", subject: "tracked", html: "<p>hello</p>", track_opens: true }
  })
  assert.strictEqual(sent.status, 200, sent.text)
  const message = (yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/messages/${sent.body.message_id}`, { key: org.key })).body
  const pixel = /https?:\/\/[^/"]+(\/t\/o\/[0-9a-f]+\.gif)/.exec(message.html)?.[1]
  assert.isDefined(pixel, message.html)
  yield* TestClock.adjust("1 second")
  return { key: org.key, inboxId: inbox.inbox_id as string, messageId: sent.body.message_id as string, pixel: pixel! }
})

const opened = (key: string) =>
  TestApp.use((app) => Effect.map(app.request("GET", "/v0/events", { key }), (r) => (r.body.events as Array<any>).filter((e) => e.event_type === "message.opened")))

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))), { timeout: "120 seconds" })(`open tracking (${storage.name})`, (it) => {
    it.effect("the pixel URL composed at send time answers a 1x1 GIF with Cache-Control: no-store", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const m = yield* trackedSend
        const res = yield* TestApp.use((a) => Effect.promise(() => a.fetch(new Request(`http://inbox.test${m.pixel}`))))
        assert.strictEqual(res.status, 200)
        assert.strictEqual(res.headers.get("content-type"), "image/gif")
        assert.include(res.headers.get("cache-control") ?? "", "no-store")
        const bytes = Buffer.from(yield* Effect.promise(() => res.arrayBuffer()))
        assert.strictEqual(bytes.subarray(0, 6).toString("latin1"), "GIF89a")
        const unknown = yield* app.request("GET", "/t/o/0123456789abcdef0123456789abcdef.gif")
        assert.strictEqual(unknown.status, 200)
      }))

    it.effect("the first open emits message.opened once with open_count and via_proxy; later opens count without a second event", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const sql = yield* SqlClient.SqlClient
        const m = yield* trackedSend
        yield* app.request("GET", m.pixel, { headers: { "user-agent": "Mozilla/5.0 Thunderbird" } })
        yield* app.request("GET", m.pixel)
        yield* app.request("GET", m.pixel)
        const events = yield* opened(m.key)
        assert.lengthOf(events, 1)
        const [event] = events
        assert.strictEqual(event.inbox_id, m.inboxId)
        assert.deepStrictEqual({ ...event.open, timestamp: undefined }, {
          inbox_id: m.inboxId,
          thread_id: event.message.thread_id,
          message_id: m.messageId,
          timestamp: undefined,
          open_count: 1,
          via_proxy: false
        })
        assert.strictEqual(event.message.message_id, m.messageId)
        assert.isUndefined(event.message.html)
        assert.strictEqual(event.thread.thread_id, event.message.thread_id)
        const counted = yield* sql<{ open_count: number }>`SELECT open_count FROM message_opens WHERE message_id = ${m.messageId}`
        assert.strictEqual(counted[0]?.open_count, 3)
      }))

    it.effect("an open through Google's image proxy has via_proxy true", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const m = yield* trackedSend
        yield* app.request("GET", m.pixel, { headers: { "user-agent": "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)" } })
        const [event] = yield* opened(m.key)
        assert.strictEqual(event.open.via_proxy, true)
      }))
  })

  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { openTracking: false }))), { timeout: "120 seconds" })(`open tracking off (${storage.name})`, (it) => {
    it.effect("with the operator switch off, track_opens is 422 tracking_disabled", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const org = yield* newOrganization()
        const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body
        const res = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/send`, { key: org.key, json: { to: "r@example.net", html: "<p>x</p>", track_opens: true } })
        assert.strictEqual(res.status, 422)
        assert.strictEqual(res.body.code, "tracking_disabled")
      }))
  })
}
