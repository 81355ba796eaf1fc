/**
 * An inbox's client settings (docs/mail-servers.md, "Client settings"): what the dashboard
 * shows a person setting up Thunderbird or Apple Mail. `GET /v0/inboxes/{inbox_id}/client-settings`
 * answers the host of INBOX_MAIL_HOST, the port and TLS of each IMAP and submission server
 * that is configured (the public port when a proxy publishes another), and the inbox's
 * address as the user name; empty lists when the servers are off. The settings are read from
 * the environment by the Settings layer (core reads no environment), on PGlite and PostgreSQL.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Settings } from "@inbox/core/internal"
import { engineLayer, newOrganization, storages, TestApp } from "@inbox/testkit"
import { ConfigProvider, Effect, Layer } from "effect"

const settingsFrom = (env: Record<string, string>) =>
  Effect.gen(function*() {
    return yield* Settings
  }).pipe(Effect.provide(Settings.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))))

describe("client settings from the environment", () => {
  it.effect("every configured server with its port and TLS, implicit TLS first; a public port replaces the listen port", () =>
    Effect.gen(function*() {
      const settings = yield* settingsFrom({
        INBOX_MAIL_HOST: "Mail.Example.com",
        INBOX_IMAP_LISTEN: "0.0.0.0:1143",
        INBOX_IMAP_PUBLIC_PORT: "143",
        INBOX_IMAPS_LISTEN: "[::]:993",
        INBOX_SUBMISSION_LISTEN: "2587"
      })
      assert.strictEqual(settings.mailHost, "mail.example.com")
      assert.deepStrictEqual(settings.mailClientServers, {
        imap: [{ port: 993, security: "tls" }, { port: 143, security: "starttls" }],
        smtp: [{ port: 2587, security: "starttls" }]
      })
    }))

  it.effect("no servers configured: both lists empty", () =>
    Effect.gen(function*() {
      const settings = yield* settingsFrom({})
      assert.deepStrictEqual(settings.mailClientServers, { imap: [], smtp: [] })
    }))
})

const servers = {
  imap: [{ port: 993, security: "tls" as const }, { port: 143, security: "starttls" as const }],
  smtp: [{ port: 465, security: "tls" as const }, { port: 587, security: "starttls" as const }]
}

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { mailHost: "mail.example.com", mailClientServers: servers }))))(
    `client settings (${storage.name})`,
    (it) => {
      it.effect("GET /v0/inboxes/{inbox_id}/client-settings answers host, ports, security and the inbox's address as user name", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body as { inbox_id: string; email: string }
          const scoped = (yield* app.request("POST", "/v0/api-keys", { key: org.key, json: { name: "mail client", inbox_id: inbox.inbox_id } })).body as { api_key: string }
          const expected = {
            inbox_id: inbox.inbox_id,
            username: inbox.email,
            imap: [{ host: "mail.example.com", port: 993, security: "tls" }, { host: "mail.example.com", port: 143, security: "starttls" }],
            smtp: [{ host: "mail.example.com", port: 465, security: "tls" }, { host: "mail.example.com", port: 587, security: "starttls" }]
          }
          for (const key of [org.key, scoped.api_key]) {
            const res = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/client-settings`, { key })
            assert.strictEqual(res.status, 200, res.text)
            assert.deepStrictEqual(res.body, expected)
          }
          // By address too, as every inbox route takes it.
          const byEmail = yield* app.request("GET", `/v0/inboxes/${encodeURIComponent(inbox.email)}/client-settings`, { key: org.key })
          assert.strictEqual(byEmail.body.inbox_id, inbox.inbox_id)
        }))

      it.effect("another organization's inbox is 404 not_found", () =>
        Effect.gen(function*() {
          const app = yield* TestApp
          const org = yield* newOrganization()
          const other = yield* newOrganization()
          const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body as { inbox_id: string }
          const res = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/client-settings`, { key: other.key })
          assert.strictEqual(res.status, 404)
          assert.strictEqual(res.body.code, "not_found")
        }))
    }
  )

  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer))))(`client settings without mail servers (${storage.name})`, (it) => {
    it.effect("the IMAP and SMTP lists are empty when no server is configured", () =>
      Effect.gen(function*() {
        const app = yield* TestApp
        const org = yield* newOrganization()
        const inbox = (yield* app.request("POST", "/v0/inboxes", { key: org.key, json: {} })).body as { inbox_id: string; email: string }
        const res = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/client-settings`, { key: org.key })
        assert.deepStrictEqual(res.body, { inbox_id: inbox.inbox_id, username: inbox.email, imap: [], smtp: [] })
      }))
  })
}
