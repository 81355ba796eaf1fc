import { assert, describe, it } from "@effect/vitest"
import { decideThread, isForwardSubject, lookupFrom } from "../../src/mail/thread.ts"

const stored = lookupFrom([
  { thread_id: "thr_a", rfc_message_id: "<root@x.org>" },
  { thread_id: "thr_a", rfc_message_id: "<second@x.org>", in_reply_to: "<root@x.org>", references: ["<root@x.org>"] },
  { thread_id: "thr_b", rfc_message_id: "<other@x.org>" }
])

describe("threading", () => {
  it("a reply joins its parent's thread through In-Reply-To", () => {
    const d = decideThread({ subject: "Re: hi", rfc_message_id: "<r@y.org>", in_reply_to: "<second@x.org>" }, stored)
    assert.deepStrictEqual(d, { _tag: "Join", thread_id: "thr_a", via: "in_reply_to", parent_rfc_message_id: "<second@x.org>", merge_thread_ids: [] })
  })

  it("falls back to References from newest to oldest when In-Reply-To is unknown", () => {
    const d = decideThread({
      subject: "Re: hi",
      rfc_message_id: "<r@y.org>",
      in_reply_to: "<unknown@z.org>",
      references: ["<other@x.org>", "<second@x.org>", "<missing@z.org>"]
    }, stored)
    assert.strictEqual(d._tag, "Join")
    if (d._tag === "Join") {
      assert.strictEqual(d.via, "references")
      assert.strictEqual(d.parent_rfc_message_id, "<second@x.org>") // newest known, not <other>
      assert.strictEqual(d.thread_id, "thr_a")
    }
  })

  it("a message with no known parent starts a new thread", () => {
    assert.deepStrictEqual(decideThread({ subject: "Re: hi", rfc_message_id: "<r@y.org>", in_reply_to: "<gone@z.org>" }, stored), { _tag: "New", reason: "no_parent" })
  })

  it("never joins on a matching subject alone", () => {
    assert.deepStrictEqual(decideThread({ subject: "Invoice", rfc_message_id: "<n@y.org>" }, stored), { _tag: "New", reason: "no_parent" })
  })

  it("a forward starts a new thread even though it references the original", () => {
    for (const subject of ["Fwd: hi", "FW: hi", "WG: hi", "TR: hi", "RV: hi", "Enc: hi"]) {
      assert.deepStrictEqual(decideThread({ subject, rfc_message_id: "<f@y.org>", in_reply_to: "<root@x.org>", references: ["<root@x.org>"] }, stored), { _tag: "New", reason: "forward" }, subject)
    }
    assert.deepStrictEqual(
      decideThread({ subject: "hi", is_forward: true, rfc_message_id: "<f@y.org>", in_reply_to: "<root@x.org>" }, stored),
      { _tag: "New", reason: "forward" }
    )
    assert.isFalse(isForwardSubject("Re: Fwd: hi"))
  })

  it("ignores a message that names itself as its parent", () => {
    assert.deepStrictEqual(decideThread({ subject: "x", rfc_message_id: "<self@y.org>", in_reply_to: "<self@y.org>" }, lookupFrom([])), { _tag: "New", reason: "no_parent" })
  })

  it("reordered arrival: a parent stored after its replies joins their thread, and other reply threads are merged into it", () => {
    const early = lookupFrom([
      { thread_id: "thr_c1", rfc_message_id: "<child1@y.org>", in_reply_to: "<late-parent@x.org>", references: ["<late-parent@x.org>"] },
      { thread_id: "thr_c2", rfc_message_id: "<child2@z.org>", references: ["<late-parent@x.org>", "<child1@y.org>"] }
    ])
    const d = decideThread({ subject: "Plans", rfc_message_id: "<late-parent@x.org>" }, early)
    assert.deepStrictEqual(d, { _tag: "Join", thread_id: "thr_c1", via: "children", parent_rfc_message_id: "<child1@y.org>", merge_thread_ids: ["thr_c2"] })
  })

  it("reordered arrival: a reply whose parent is known joins the parent's thread and merges its early children's threads", () => {
    const rows = lookupFrom([
      { thread_id: "thr_p", rfc_message_id: "<p@x.org>" },
      { thread_id: "thr_k", rfc_message_id: "<kid@z.org>", in_reply_to: "<mid@y.org>" }
    ])
    const d = decideThread({ subject: "Re: p", rfc_message_id: "<mid@y.org>", in_reply_to: "<p@x.org>" }, rows)
    assert.deepStrictEqual(d, { _tag: "Join", thread_id: "thr_p", via: "in_reply_to", parent_rfc_message_id: "<p@x.org>", merge_thread_ids: ["thr_k"] })
  })

  it("reordered arrival: a forward whose replies arrived first joins their thread, not the original's", () => {
    const rows = lookupFrom([
      { thread_id: "thr_orig", rfc_message_id: "<orig@x.org>" },
      { thread_id: "thr_r", rfc_message_id: "<re-fwd@z.org>", in_reply_to: "<fwd@y.org>" }
    ])
    const d = decideThread({ subject: "Fwd: orig", rfc_message_id: "<fwd@y.org>", in_reply_to: "<orig@x.org>" }, rows)
    assert.deepStrictEqual(d, { _tag: "Join", thread_id: "thr_r", via: "children", parent_rfc_message_id: "<re-fwd@z.org>", merge_thread_ids: [] })
  })
})
