/**
 * The human output of inboxctl, in process: tables, single resources and error lines.
 * The spawned tests (cli.test.ts) use --json; these pin what a person reads.
 */
import { assert, describe, it } from "@effect/vitest"
import { PERMISSIONS, ReservedUsername, validationError } from "@inbox/core/internal"
import { errorLines, fields, isSeries, listing, seriesLines, sparkline } from "../src/output.ts"

describe("inboxctl output", () => {
  it("a list prints as an aligned table with a hint for the next page", () => {
    const text = listing({
      count: 2,
      limit: 2,
      next_page_token: "abc",
      pods: [
        { pod_id: "pod_1", name: "default", created_at: "2026-01-01T00:00:00.000Z" },
        { pod_id: "pod_22", name: "team", client_id: "c-1", created_at: "2026-01-02T00:00:00.000Z" }
      ]
    }, ["pod_id", "name", "client_id", "created_at"], "pods")
    assert.strictEqual(text, [
      "POD_ID  NAME     CLIENT_ID  CREATED_AT",
      "pod_1   default  -          2026-01-01T00:00:00.000Z",
      "pod_22  team     c-1        2026-01-02T00:00:00.000Z",
      "More: --page-token abc"
    ].join("\n"))
    assert.strictEqual(listing({ count: 0, limit: 50, inboxes: [] }, ["inbox_id"], "inboxes"), "No inboxes.")
  })

  it("one resource prints as aligned fields; maps as key=value and a key with every permission as all", () => {
    assert.strictEqual(
      fields({ api_key_id: "key_1", permissions: Object.fromEntries(PERMISSIONS.map((p) => [p, true])), metadata: { team: "red" } }),
      ["api_key_id   key_1", "permissions  all", "metadata     team=red"].join("\n")
    )
    const some = Object.fromEntries(PERMISSIONS.map((p) => [p, p === "inbox_read" || p === "message_read"]))
    assert.strictEqual(fields({ permissions: some }), "permissions  inbox_read,message_read")
  })

  it("inboxctl metrics draws a sparkline per series scaled to its own min and max; a rate with nothing sent is a gap", () => {
    assert.strictEqual(sparkline([0, 1, 2, 3, 4, 5, 6, 7]), "▁▂▃▄▅▆▇█")
    assert.strictEqual(sparkline([5, 5, 5]), "▁▁▁")
    assert.strictEqual(sparkline([0, null, 1]), "▁ █")
    const usage = {
      message_count: [
        { timestamp: "2026-01-01T00:00:00.000Z", value: 0 },
        { timestamp: "2026-01-01T01:00:00.000Z", value: 7 },
        { timestamp: "2026-01-01T02:00:00.000Z", value: 14 }
      ],
      pod_count: [
        { timestamp: "2026-01-01T00:00:00.000Z", value: 1 },
        { timestamp: "2026-01-01T01:00:00.000Z", value: 1 },
        { timestamp: "2026-01-01T02:00:00.000Z", value: 1 }
      ]
    }
    assert.isTrue(isSeries(usage))
    assert.strictEqual(seriesLines(usage), [
      "SERIES         TREND  LAST  MIN  MAX",
      "message_count  ▁▅█    14    0    14",
      "pod_count      ▁▁▁    1     1    1",
      "3 buckets from 2026-01-01T00:00:00.000Z to 2026-01-01T02:00:00.000Z"
    ].join("\n"))
    const rates = {
      bounce: [
        { timestamp: "2026-01-01T00:00:00.000Z", sent: 0, rate: null },
        { timestamp: "2026-01-01T01:00:00.000Z", sent: 4, rate: 0.25 }
      ],
      complaint: [
        { timestamp: "2026-01-01T00:00:00.000Z", sent: 0, rate: null },
        { timestamp: "2026-01-01T01:00:00.000Z", sent: 4, rate: 0 }
      ]
    }
    assert.strictEqual(seriesLines(rates), [
      "SERIES     TREND  LAST  MIN   MAX   SENT",
      "bounce      ▁     0.25  0.25  0.25  4",
      "complaint   ▁     0     0     0     4",
      "2 buckets from 2026-01-01T00:00:00.000Z to 2026-01-01T01:00:00.000Z"
    ].join("\n"))
    assert.isFalse(isSeries({ total: 3, counts: { "message.sent": 3 } }), "event counts print as fields")
    assert.isFalse(isSeries({ pod_id: "pod_1", name: "default" }))
  })

  it("an error prints error: <code>: <message>, each field issue, then fix", () => {
    assert.strictEqual(
      errorLines(new ReservedUsername({ message: "The username \"admin\" is reserved.", fix: "Choose another username." })),
      "error: reserved_username: The username \"admin\" is reserved.\nfix: Choose another username."
    )
    assert.strictEqual(
      errorLines(validationError([{ path: ["permissions", "0"], message: "Unknown permission \"x\"" }, { path: ["name"], message: "Missing key" }])),
      "error: validation_error: The request failed validation.\n  permissions.0: Unknown permission \"x\"\n  name: Missing key"
    )
  })
})
