/**
 * A scheduled draft outlives its server: `inboxctl serve` in a child process takes a draft due
 * a few seconds later and is stopped before it is due; while it is down the moment passes. After
 * a restart the draft is sent exactly once (one sent message, the draft consumed). The
 * two-engine race in core's drafts tests covers exactly-once between live runners; this covers
 * the durable job across a real process stop. PGlite always, PostgreSQL when
 * INBOX_TEST_DATABASE_URL is set.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import { pgliteStorage, postgresStorage, type Storage } from "./cli-flow.ts"
import { childEnv, createOrg, serve } from "./processes.ts"

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const INBOX = "later@inbox.localhost"
const url = process.env["INBOX_TEST_DATABASE_URL"]
const storages: ReadonlyArray<Storage> = [pgliteStorage(), ...(url !== undefined && url !== "" ? [postgresStorage(url)] : [])]

for (const storage of storages) {
  describe(`inboxctl serve restarted after a draft fell due (${storage.name})`, { timeout: 300_000 }, () => {
    let env: Record<string, string> = {}
    let key = ""

    beforeAll(async () => {
      env = childEnv(await storage.setUp())
      key = await createOrg(ROOT, env)
    }, 120_000)
    afterAll(() => storage.tearDown())

    it("a scheduled draft due while the server is down is sent once after restart", async () => {
      const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
      const first = await serve(ROOT, env)
      let draftId = ""
      try {
        const inbox = await fetch(`${first.url}/v0/inboxes`, { method: "POST", headers: auth, body: JSON.stringify({ username: "later" }) })
        assert.strictEqual(inbox.status, 200, await inbox.clone().text())
        const sendAt = new Date(Date.now() + 3_000).toISOString()
        const made = await fetch(`${first.url}/v0/inboxes/${INBOX}/drafts`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ to: ["ann@example.org"], subject: "While you were out", text: "Sent after the restart.", send_at: sendAt })
        })
        const draft = (await made.json()) as { draft_id: string; send_status?: string }
        assert.strictEqual(made.status, 200, JSON.stringify(draft))
        assert.strictEqual(draft.send_status, "scheduled")
        draftId = draft.draft_id
      } finally {
        first.server.kill("SIGTERM")
        const run = await first.server.output
        assert.strictEqual(run.code, 0, run.stderr)
      }
      // The draft falls due while no process is running.
      await new Promise((r) => setTimeout(r, 4_000))

      const second = await serve(ROOT, env)
      try {
        const sent = async () => {
          const listed = await fetch(`${second.url}/v0/inboxes/${INBOX}/messages?labels=sent&limit=10`, { headers: auth })
          return ((await listed.json()) as { messages: ReadonlyArray<{ message_id: string; subject?: string }> }).messages
        }
        // The message is stored by the send, the draft consumed just after: wait for both.
        const draftStatus = async () => (await fetch(`${second.url}/v0/drafts/${draftId}`, { headers: auth })).status
        let messages = await sent()
        for (let i = 0; i < 300 && (messages.length === 0 || (await draftStatus()) !== 404); i++) {
          await new Promise((r) => setTimeout(r, 100))
          messages = await sent()
        }
        assert.strictEqual(messages.length, 1)
        assert.strictEqual(messages[0]?.subject, "While you were out")
        assert.strictEqual(await draftStatus(), 404)
        // A second look after the job runner's next turns: still exactly one.
        await new Promise((r) => setTimeout(r, 1_500))
        assert.strictEqual((await sent()).length, 1)
      } finally {
        second.server.kill("SIGTERM")
        await second.server.output
      }
    })
  })
}
