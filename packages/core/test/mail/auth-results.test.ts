/**
 * Incoming Authentication-Results headers that claim our authserv-id (RFC 8601 section 5):
 * renamed X-Original-Authentication-Results before our own is added; every other header,
 * and anything below the header block, kept byte for byte.
 */
import { assert, describe, it } from "@effect/vitest"
import { authservId, renameOurAuthenticationResults } from "../../src/mail/auth-results.ts"

const OURS = "mx.inbox.example"
const text = (raw: Uint8Array) => Buffer.from(raw).toString("latin1")

describe("Authentication-Results of our authserv-id", () => {
  it("reads the authserv-id past comments and folding, unquoted, lower-cased, with or without a version", () => {
    assert.strictEqual(authservId(" mx.inbox.example; spf=pass"), "mx.inbox.example")
    assert.strictEqual(authservId("MX.Inbox.Example 1; dkim=pass"), "mx.inbox.example")
    assert.strictEqual(authservId(" (a (nested) comment)\r\n\t mx.inbox.example;dkim=pass"), "mx.inbox.example")
    assert.strictEqual(authservId("\"mx.inbox.example\"; none"), "mx.inbox.example")
    assert.strictEqual(authservId("mx.inbox.example"), "mx.inbox.example")
    assert.isUndefined(authservId("  ; spf=pass"))
  })

  it("renames each header of ours, whatever its case, folding or comments, and keeps the others and the body as they are", () => {
    const lines = [
      "Received: from a by b",
      "Authentication-Results: mx.inbox.example; dkim=pass header.d=bank.example",
      "authentication-results : (forged)",
      "\tMX.INBOX.EXAMPLE 1; spf=pass",
      "Authentication-Results: mx.google.com; dkim=pass",
      "Authentication-Results: mx.inbox.example.evil; dkim=pass",
      "Subject: hi",
      "",
      "Authentication-Results: mx.inbox.example; a body line, not a header",
      ""
    ]
    const renamed = lines.map((line, i) => (i === 1 || i === 2 ? `X-Original-${line}` : line))
    assert.strictEqual(text(renameOurAuthenticationResults(Buffer.from(lines.join("\r\n"), "latin1"), OURS)), renamed.join("\r\n"))
  })

  it("gives the same bytes back when no header is ours, LF-only messages included", () => {
    const raw = new Uint8Array(Buffer.from("Authentication-Results: mx.google.com; spf=pass\nSubject: x\n\nAuthentication-Results: mx.inbox.example; x\n"))
    assert.strictEqual(renameOurAuthenticationResults(raw, OURS), raw)
    const first = Buffer.from("Authentication-Results: mx.inbox.example; spf=pass\nSubject: x\n\nbody\n")
    assert.strictEqual(text(renameOurAuthenticationResults(first, OURS)), "X-Original-Authentication-Results: mx.inbox.example; spf=pass\nSubject: x\n\nbody\n")
  })
})
