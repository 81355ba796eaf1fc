/**
 * Search (spec: Messages `/search`, Threads `/threads/search`, Search results' highlights;
 * docs/search.md): the query language, ranking, highlights, any language's text, prefix
 * search, hidden labels and key scope as in lists, malformed queries as 400, and a fuzz of
 * 10,000 random queries that each answer a result or a 400, never a 500.
 */
import { assert, it, layer } from "@effect/vitest"
import { deliverMail, engineLayer, newOrganization, storages, TEST_INBOUND_SECRET, TestApp } from "@inbox/testkit"
import { parseQuery, Search, SearchBudget } from "@inbox/core/internal"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"

const setUp = Effect.gen(function*() {
  const app = yield* TestApp
  const org = yield* newOrganization({ plan: "scale" })
  const make = (username: string) =>
    Effect.map(app.request("POST", "/v0/inboxes", { key: org.key, json: { username: `${username}${Math.random().toString(16).slice(2, 8)}` } }), (r) =>
      r.body as { inbox_id: string; email: string; pod_id: string })
  const inbox = yield* make("se")
  const deliver = (mail: Parameters<typeof deliverMail>[1], to = inbox.email) =>
    Effect.gen(function*() {
      const res = yield* deliverMail(to, mail)
      if (res.status !== 200) throw new Error(`delivery: ${res.status} ${res.text}`)
      yield* TestClock.adjust("1 second")
      return res.body.delivered[0] as { message_id: string; thread_id: string }
    })
  const search = (q: string, key = org.key, inboxId = inbox.inbox_id) =>
    app.request("GET", `/v0/inboxes/${inboxId}/messages/search?q=${encodeURIComponent(q)}`, { key })
  const ids = (res: { body: { messages: ReadonlyArray<{ message_id: string }> } }) => res.body.messages.map((m) => m.message_id)
  const found = (q: string) => Effect.map(search(q), (res) => {
    if (res.status !== 200) throw new Error(`search ${q}: ${res.status} ${res.text}`)
    return ids(res)
  })
  return { app, key: org.key, organizationId: org.organizationId, inbox, make, deliver, search, found }
})

for (const storage of storages()) {
  layer(TestApp.layer.pipe(Layer.provideMerge(engineLayer(storage.layer, { inboundSecret: TEST_INBOUND_SECRET }))), { timeout: "300 seconds" })(
    `search (${storage.name})`,
    (it) => {
      it.effect("searches from, to, subject and body; words must all match; quoted phrases; -exclusion; OR", () =>
        Effect.gen(function*() {
          const { deliver, found, inbox } = yield* setUp
          const a = yield* deliver({ from: "Ann Lee <ann@alpha.example>", subject: "Quarterly invoice", text: "Please pay the overdue invoice by Friday." })
          const b = yield* deliver({ from: "bob@beta.example", subject: "Lunch plans", text: "Friday lunch at the harbour? The invoice can wait." })
          const c = yield* deliver({ from: "carol@gamma.example", subject: "Harbour tour", text: "Tickets for the harbour tour.", to: [inbox.email, "dave@delta.example"] })
          assert.sameMembers(yield* found("invoice "), [a.message_id, b.message_id])
          assert.deepStrictEqual(yield* found("invoice lunch "), [b.message_id])
          assert.deepStrictEqual(yield* found("\"overdue invoice\""), [a.message_id])
          assert.deepStrictEqual(yield* found("\"invoice overdue\""), [])
          assert.deepStrictEqual(yield* found("invoice -lunch"), [a.message_id])
          assert.sameMembers(yield* found("lunch OR tickets"), [b.message_id, c.message_id])
          assert.deepStrictEqual(yield* found("ann "), [a.message_id])
          assert.deepStrictEqual(yield* found("dave@delta.example"), [c.message_id])
        }))

      it.effect("from:, to:, subject:, has:attachment, label:, before: and after: restrict the match", () =>
        Effect.gen(function*() {
          const { app, key, deliver, found, inbox } = yield* setUp
          const a = yield* deliver({ from: "Ann <ann@alpha.example>", subject: "Harbour report", text: "The report from bob is attached.", attachments: [{ filename: "report.pdf", content: "x", contentType: "application/pdf" }] })
          yield* TestClock.adjust("2 days")
          const b = yield* deliver({ from: "Bob <bob@beta.example>", subject: "Re: ann's report", text: "Thanks ann, the harbour numbers look right.", to: [inbox.email, "erin@echo.example"] })
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${b.message_id}`, { key, json: { add_labels: ["vip"] } })
          assert.deepStrictEqual(yield* found("from:ann"), [a.message_id])
          assert.deepStrictEqual(yield* found("from:alpha.example"), [a.message_id])
          assert.deepStrictEqual(yield* found("from:bob@beta.example"), [b.message_id])
          assert.deepStrictEqual(yield* found("to:erin"), [b.message_id])
          assert.deepStrictEqual(yield* found("subject:harbour"), [a.message_id])
          assert.deepStrictEqual(yield* found("subject:\"harbour report\""), [a.message_id])
          assert.deepStrictEqual(yield* found("harbour has:attachment"), [a.message_id])
          assert.deepStrictEqual(yield* found("report.pdf"), [a.message_id])
          assert.deepStrictEqual(yield* found("harbour label:vip"), [b.message_id])
          assert.deepStrictEqual(yield* found("harbour -label:vip"), [a.message_id])
          assert.deepStrictEqual(yield* found("harbour before:1970-01-02"), [a.message_id])
          assert.deepStrictEqual(yield* found("harbour after:1970-01-02"), [b.message_id])
          assert.deepStrictEqual(yield* found("-from:ann harbour"), [b.message_id])
        }))

      it.effect("is:unread finds the unread messages and threads, is:read the others; an unknown operator is 400 validation_error naming it", () =>
        Effect.gen(function*() {
          const { app, key, deliver, found, inbox, search } = yield* setUp
          const a = yield* deliver({ from: "ann@alpha.example", subject: "Ferry times", text: "The ferry leaves at nine." })
          const b = yield* deliver({ from: "bob@beta.example", subject: "Ferry tickets", text: "Tickets for the ferry." })
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${a.message_id}`, { key, json: { remove_labels: ["unread"] } })
          assert.deepStrictEqual(yield* found("ferry is:unread"), [b.message_id])
          assert.deepStrictEqual(yield* found("ferry is:read"), [a.message_id])
          assert.deepStrictEqual(yield* found("ferry -is:read"), [b.message_id])
          const threads = yield* app.request("GET", `/v0/inboxes/${inbox.inbox_id}/threads/search?q=${encodeURIComponent("is:unread ferry")}`, { key })
          assert.strictEqual(threads.status, 200, threads.text)
          assert.deepStrictEqual(threads.body.threads.map((t: { thread_id: string }) => t.thread_id), [b.thread_id])
          const res = yield* search("ferry in:inbox")
          assert.strictEqual(res.status, 400, res.text)
          assert.strictEqual(res.body.code, "validation_error")
          assert.deepStrictEqual(res.body.errors[0].path, ["q"])
          assert.include(res.body.message, "in: is not an operator")
        }))

      it.effect("results are ranked: a match in the subject comes before one in the body; each has highlights.text with the matched words in **", () =>
        Effect.gen(function*() {
          const { deliver, search } = yield* setUp
          const inSubject = yield* deliver({ subject: "Budget review", text: "Numbers attached for next week." })
          const inBody = yield* deliver({ subject: "Weekly notes", text: "Some notes. We should plan the budget review together soon." })
          const res = yield* search("budget")
          assert.strictEqual(res.status, 200, res.text)
          assert.deepStrictEqual(res.body.messages.map((m: { message_id: string }) => m.message_id), [inSubject.message_id, inBody.message_id])
          const [first, second] = res.body.messages
          assert.strictEqual(first.highlights.text.length, 1)
          assert.include(first.highlights.text[0], "**Budget**")
          assert.include(second.highlights.text[0], "the **budget** review")
          assert.strictEqual(second.subject, "Weekly notes")
          assert.isString(second.preview)
        }))

      it.effect("any language's text is findable: accents fold, case folds, several scripts; the last word typed matches as a prefix", () =>
        Effect.gen(function*() {
          const { deliver, found, search } = yield* setUp
          const fr = yield* deliver({ subject: "Réunion", text: "La crème brûlée était délicieuse au café." })
          const de = yield* deliver({ subject: "Grüße", text: "Wir treffen uns an der Straße." })
          const ru = yield* deliver({ subject: "Встреча", text: "Привет, завтра встреча в офисе." })
          const el = yield* deliver({ subject: "Συνάντηση", text: "Καλημέρα, η συνάντηση είναι αύριο." })
          const ja = yield* deliver({ subject: "会議", text: "明日 会議 があります" })
          assert.deepStrictEqual(yield* found("creme brulee"), [fr.message_id])
          assert.deepStrictEqual(yield* found("CAFÉ"), [fr.message_id])
          assert.deepStrictEqual(yield* found("reunion"), [fr.message_id])
          assert.deepStrictEqual(yield* found("strasse"), [de.message_id])
          assert.deepStrictEqual(yield* found("встреча"), [ru.message_id])
          assert.deepStrictEqual(yield* found("συναντηση"), [el.message_id])
          assert.deepStrictEqual(yield* found("会議"), [ja.message_id])
          // The last word typed is a prefix; a word followed by a space, or quoted, is whole.
          assert.deepStrictEqual(yield* found("delic"), [fr.message_id])
          assert.deepStrictEqual(yield* found("delic "), [])
          assert.deepStrictEqual(yield* found("\"delic\""), [])
          assert.deepStrictEqual(yield* found("Прив"), [ru.message_id])
          const hl = (yield* search("delic")).body.messages[0].highlights.text[0]
          assert.include(hl, "**délicieuse**")
        }))

      it.effect("hidden labels apply as in lists: spam is left out unless label:spam is asked, which needs label_spam_read", () =>
        Effect.gen(function*() {
          const { app, key, deliver, found, search, inbox } = yield* setUp
          const spam = yield* deliver({ subject: "Cheap pills", text: "pills pills" })
          const ham = yield* deliver({ subject: "Pills reminder", text: "take the pills" })
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${spam.message_id}`, { key, json: { add_labels: ["spam"] } })
          assert.deepStrictEqual(yield* found("pills"), [ham.message_id])
          assert.deepStrictEqual(yield* found("pills label:spam"), [spam.message_id])
          // The search index follows the label both ways: no longer spam, it is found again.
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${spam.message_id}`, { key, json: { remove_labels: ["spam"] } })
          assert.sameMembers(yield* found("pills"), [ham.message_id, spam.message_id])
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${spam.message_id}`, { key, json: { add_labels: ["trash"] } })
          assert.deepStrictEqual(yield* found("pills"), [ham.message_id])
          const limited = (yield* app.request("POST", "/v0/api-keys", { key, json: { name: "reader", permissions: ["message_read", "inbox_read"] } })).body.api_key
          const refused = yield* search("pills label:spam", limited)
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.body.code, "missing_permission")
        }))

      it.effect("key scope applies: an inbox key cannot search another inbox (404), and thread search at organization level shows only its inbox", () =>
        Effect.gen(function*() {
          const { app, key, deliver, make, search } = yield* setUp
          const other = yield* make("other")
          const mine = yield* deliver({ subject: "scoped zebra" })
          yield* deliver({ subject: "scoped zebra elsewhere" }, other.email)
          const { inbox } = { inbox: (yield* app.request("GET", `/v0/threads/${mine.thread_id}`, { key })).body as { inbox_id: string } }
          const scoped = (yield* app.request("POST", "/v0/api-keys", { key, json: { name: "one inbox", inbox_id: inbox.inbox_id } })).body.api_key
          assert.strictEqual((yield* search("zebra", scoped, other.inbox_id)).status, 404)
          const orgWide = yield* app.request("GET", `/v0/threads/search?q=zebra`, { key: scoped })
          assert.strictEqual(orgWide.status, 200, orgWide.text)
          assert.deepStrictEqual(orgWide.body.threads.map((t: { thread_id: string }) => t.thread_id), [mine.thread_id])
          const all = yield* app.request("GET", `/v0/threads/search?q=zebra`, { key })
          assert.strictEqual(all.body.count, 2)
        }))

      it.effect("thread search at organization, pod and inbox level ranks threads; POST /search takes the same fields in a body; pages follow", () =>
        Effect.gen(function*() {
          const { app, key, deliver, inbox } = yield* setUp
          const t1 = yield* deliver({ subject: "Kayak trip", text: "kayak kayak" })
          const t2 = yield* deliver({ subject: "Notes", text: "bring the kayak" })
          for (const path of ["/v0/threads/search", `/v0/pods/${inbox.pod_id}/threads/search`, `/v0/inboxes/${inbox.inbox_id}/threads/search`]) {
            const res = yield* app.request("GET", `${path}?q=kayak`, { key })
            assert.strictEqual(res.status, 200, res.text)
            assert.deepStrictEqual(res.body.threads.map((t: { thread_id: string }) => t.thread_id), [t1.thread_id, t2.thread_id])
          }
          const posted = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/search`, { key, json: { q: "kayak", limit: 1 } })
          assert.strictEqual(posted.status, 200, posted.text)
          assert.deepStrictEqual(posted.body.messages.map((m: { message_id: string }) => m.message_id), [t1.message_id])
          const next = yield* app.request("POST", `/v0/inboxes/${inbox.inbox_id}/messages/search`, { key, json: { q: "kayak", limit: 1, page_token: posted.body.next_page_token } })
          assert.deepStrictEqual(next.body.messages.map((m: { message_id: string }) => m.message_id), [t2.message_id])
          assert.isUndefined(next.body.next_page_token)
        }))

      it.effect("ranked means among the newest matches: the probe, the walk of the time index and the match index find the same candidates", () =>
        Effect.gen(function*() {
          const { app, key, deliver, inbox, organizationId, make } = yield* setUp
          // Another inbox of the organization (and of its pod) holds the same words, newer: an
          // inbox's search answers with its own by every way, a pod's with both inboxes'.
          const neighbour = yield* make("se-neighbour")
          // 12 messages: "harbour" in most (a common word), "kayak" in two (a rare one), the
          // subject, a phrase and a prefix in some; one is spam (hidden from every way).
          for (let i = 0; i < 12; i++) {
            yield* deliver({
              from: `sender${i % 3}@port.example`,
              subject: i % 4 === 0 ? "harbour schedule" : `note ${i}`,
              text: `${i % 5 === 0 ? "kayak rental at the " : ""}${i % 6 === 5 ? "quiet " : "harbour "}${i % 2 === 0 ? "tides table" : "tide tables"} ${"filler ".repeat(i)}`
            })
          }
          const spam = yield* deliver({ subject: "harbour prize", text: "harbour harbour kayak" })
          const elsewhere = yield* Effect.forEach([1, 2, 3, 4], (i) =>
            deliver({ subject: `harbour kayak ${i}`, text: "kayak tide tables at the harbour, quiet" }, neighbour.email))
          yield* app.request("PATCH", `/v0/inboxes/${inbox.inbox_id}/messages/${spam.message_id}`, { key, json: { add_labels: ["spam"] } })
          const principal = { organizationId, scope: { type: "organization" as const } }
          const all = yield* Search.use((s) => s.messages(principal, inbox.inbox_id, { q: "harbour ", limit: 20 }))
          const times = all.items.map((m) => m.timestamp).sort().reverse()
          const queries = ["harbour ", "kayak ", "subject:harbour", "\"tide tables\"", "tid", "harbour -kayak", "kayak OR quiet", "label:received harbour ",
            `harbour before:${times[4]}`, `after:${times[7]} tide `]
          // Candidates bound 3: the probe finds them (large probe), the walk (one-row probe,
          // then a long walk) or the match index (one-row probe, one-row walk), which finds
          // the inbox's own matches by its term beside the query's.
          const ways = [
            { candidates: 3, probe: 1_000, walk: 1_000 },
            { candidates: 3, probe: 1, walk: 1_000 },
            { candidates: 3, probe: 1, walk: 1 },
            { candidates: 3, probe: 2, walk: 4 }
          ]
          // Label and attachment tests are made on messages, after the match index: these find nothing, or need every match looked up.
          for (const q of [...queries, "harbour label:important", "harbour has:attachment", "harbour -label:received", "(kayak OR label:received) harbour "]) {
            const answers = yield* Effect.forEach(ways, (way) =>
              Search.use((s) =>
                Effect.all([
                  Effect.map(s.messages(principal, inbox.inbox_id, { q, limit: 10 }), (p) => p.items.map((m) => m.message_id)),
                  Effect.map(s.threads(principal, {}, { q, limit: 10 }), (p) => p.items.map((t) => t.thread_id)),
                  Effect.map(s.threads(principal, { podId: inbox.pod_id }, { q, limit: 10 }), (p) => p.items.map((t) => t.thread_id)),
                  Effect.map(s.threads(principal, { inboxId: inbox.inbox_id }, { q, limit: 10 }), (p) => p.items.map((t) => t.thread_id))
                ])
              ).pipe(Effect.provideService(SearchBudget, way)))
            for (const [i, answer] of answers.entries()) assert.deepStrictEqual(answer, answers[0], `${q} by way ${i}`)
            if (queries.includes(q)) assert.isAbove(answers[0]![0].length, 0, q)
            assert.isAtMost(answers[0]![0].length, 3, q)
            assert.notInclude(answers[0]![0], spam.message_id, q)
            for (const m of elsewhere) assert.notInclude(answers[0]![0], m.message_id, q)
          }
          // The bound is the newest matches: with 3 candidates, "harbour" ranks only the 3 newest.
          const newest = yield* Search.use((s) => s.messages(principal, inbox.inbox_id, { q: "harbour ", limit: 10 })).pipe(
            Effect.provideService(SearchBudget, { candidates: 3, probe: 1, walk: 1 })
          )
          assert.strictEqual(all.items.length, 10)
          const newestThree = [...all.items].sort((a, b) => b.timestamp.localeCompare(a.timestamp)).slice(0, 3).map((m) => m.message_id)
          assert.sameMembers(newest.items.map((m) => m.message_id), newestThree)
        }))

      it.effect("a malformed query is 400 validation_error naming the problem on q", () =>
        Effect.gen(function*() {
          const { search } = yield* setUp
          for (
            const [q, says] of [
              ["\"open phrase", "quote"],
              ["(a b", "("],
              ["a b)", ")"],
              ["OR a", "OR"],
              ["a OR", "OR"],
              ["before:yesterday", "before:"],
              ["has:wings", "has:"],
              ["from:", "from:"],
              ["!!! ???", "no word"],
              ["", "q"]
            ] as const
          ) {
            const res = yield* search(q)
            assert.strictEqual(res.status, 400, `${q}: ${res.text}`)
            assert.strictEqual(res.body.code, "validation_error")
            assert.deepStrictEqual(res.body.errors[0].path, ["q"])
            if (q !== "") assert.include(res.body.message, says, q)
          }
        }))

      it.effect("fuzz: 10,000 random query strings each answer a result or a 400, never a 500", () =>
        Effect.gen(function*() {
          const { deliver, search } = yield* setUp
          yield* deliver({ subject: "fuzz target", text: "alpha beta gamma délta 会議 e-mail ann@example.org 3.14" })
          const alphabet = ["a", "b", "é", "会", " ", " ", "\"", "-", "(", ")", ":", "*", "&", "|", "!", "'", "\\", "<", ">", "OR ", "from:", "to:", "subject:", "has:", "label:", "before:", "after:", "2024-01-01", "@", ".", "%", "_", "\u00a0", "\u200b", "ß", "Ω", "𝒳", "🙂", "'':*", "&&", "!!", "<->", "\t"]
          let seed = 42
          const random = () => {
            seed = (seed * 1103515245 + 12345) % 2147483648
            return seed / 2147483648
          }
          const queries = Array.from({ length: 10_000 }, () =>
            Array.from({ length: 1 + Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(""))
          // Every query is parsed; a sample of those refused and of those that parse (a quarter, at least 600) also go through SQL.
          let sent = 0
          for (const [i, q] of queries.entries()) {
            const parsed = parseQuery(q)
            if (parsed._tag === "Problem" && i % 20 !== 0) continue
            if (parsed._tag === "Ok" && i % 4 !== 0 && sent > 600) continue
            sent++
            const res = yield* search(q)
            assert.include([200, 400], res.status, `${JSON.stringify(q)}: ${res.text}`)
            if (res.status === 400) assert.strictEqual(res.body.code, "validation_error")
          }
          assert.isAbove(sent, 600)
        }), { timeout: 240_000 })
    }
  )
}
