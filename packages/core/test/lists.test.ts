/**
 * The verdict of the allow and block lists (docs/lists.md, "Allow and block lists"; spec, Errors:
 * "Lists are checked at inbox, then pod, then organization scope ...; the first scope with
 * a matching entry decides"), as a table of cases run through `Lists.verdicts` on every
 * storage. Each case starts from a fresh organization with a pod P holding inbox I (the
 * inbox asked about), a second inbox J in P and a second pod Q, and puts its entries on
 * their lists; every case asks about several addresses in one call.
 */
import { assert, it, layer } from "@effect/vitest"
import {
  Engine,
  Inboxes,
  type ListDirection,
  ListOperations,
  Lists,
  type ListType,
  Organizations,
  Pods,
  type Principal,
  type Verdict
} from "@inbox/core/internal"
import { engineLayer, storages } from "@inbox/testkit"
import { Effect } from "effect"

type Level = "organization" | "pod" | "inbox" | "other inbox" | "other pod" | "other organization"

interface Entry {
  readonly level: Level
  readonly type: ListType
  readonly entry: string
  readonly direction?: ListDirection
}

interface Case {
  readonly rule: string
  readonly entries: ReadonlyArray<Entry>
  readonly direction?: ListDirection
  /** Address as given to verdicts, and the verdict expected for it. */
  readonly expect: Readonly<Record<string, Verdict>>
}

const CASES: ReadonlyArray<Case> = [
  {
    rule: "with no entries anywhere every address is allowed",
    entries: [],
    expect: { "a@example.com": "allow", "b@example.org": "allow" }
  },
  {
    rule: "an organization block entry blocks the address, and only it",
    entries: [{ level: "organization", type: "block", entry: "bad@example.com" }],
    expect: { "bad@example.com": "block", "good@example.com": "allow" }
  },
  {
    rule: "an inbox block beats an organization allow",
    entries: [
      { level: "organization", type: "allow", entry: "example.com" },
      { level: "inbox", type: "block", entry: "x@example.com" }
    ],
    expect: { "x@example.com": "block", "y@example.com": "allow" }
  },
  {
    rule: "an inbox allow beats an organization block",
    entries: [
      { level: "organization", type: "block", entry: "example.com" },
      { level: "inbox", type: "allow", entry: "x@example.com" }
    ],
    expect: { "x@example.com": "allow", "y@example.com": "block" }
  },
  {
    rule: "a pod entry beats an organization entry, and an inbox entry beats a pod entry",
    entries: [
      { level: "organization", type: "allow", entry: "example.com" },
      { level: "pod", type: "block", entry: "example.com" },
      { level: "inbox", type: "allow", entry: "vip@example.com" }
    ],
    expect: { "vip@example.com": "allow", "other@example.com": "block" }
  },
  {
    rule: "within one scope block beats allow",
    entries: [
      { level: "pod", type: "allow", entry: "x@example.com" },
      { level: "pod", type: "block", entry: "x@example.com" },
      { level: "organization", type: "allow", entry: "x@example.com" }
    ],
    expect: { "x@example.com": "block" }
  },
  {
    rule: "within one scope a domain block beats an address allow",
    entries: [
      { level: "inbox", type: "allow", entry: "x@example.com" },
      { level: "inbox", type: "block", entry: "example.com" }
    ],
    expect: { "x@example.com": "block" }
  },
  {
    rule: "the nearest scope with a match decides, even a domain entry over an address entry further out",
    entries: [
      { level: "organization", type: "block", entry: "bob@example.com" },
      { level: "inbox", type: "allow", entry: "example.com" }
    ],
    expect: { "bob@example.com": "allow" }
  },
  {
    rule: "a non-empty allow list without a match blocks",
    entries: [{ level: "organization", type: "allow", entry: "friend@example.com" }],
    expect: { "friend@example.com": "allow", "stranger@example.com": "block" }
  },
  {
    rule: "a non-empty allow list at any of the three scopes blocks an address no scope matches",
    entries: [
      { level: "inbox", type: "allow", entry: "partner.example" },
      { level: "organization", type: "block", entry: "spam.example" }
    ],
    expect: { "a@partner.example": "allow", "a@spam.example": "block", "a@elsewhere.example": "block" }
  },
  {
    rule: "a block list alone never blocks an address it does not match",
    entries: [{ level: "pod", type: "block", entry: "spam.example" }],
    expect: { "a@spam.example": "block", "a@ham.example": "allow" }
  },
  {
    rule: "a domain entry matches the domain and its subdomains, not look-alikes",
    entries: [{ level: "organization", type: "block", entry: "example.com" }],
    expect: {
      "a@example.com": "block",
      "a@mail.example.com": "block",
      "a@deep.mail.example.com": "block",
      "a@notexample.com": "allow",
      "a@example.com.evil.org": "allow",
      "a@example.co": "allow"
    }
  },
  {
    rule: "a subdomain entry does not match its parent domain",
    entries: [{ level: "organization", type: "block", entry: "mail.example.com" }],
    expect: { "a@mail.example.com": "block", "a@x.mail.example.com": "block", "a@example.com": "allow" }
  },
  {
    rule: "an address entry matches that address only, case-insensitively; the verdict is keyed lower-case",
    entries: [{ level: "organization", type: "block", entry: "Bob@Example.COM" }],
    expect: { "BOB@example.com": "block", "bob@EXAMPLE.com": "block", "alice@example.com": "allow", "bob@mail.example.com": "allow" }
  },
  {
    rule: "an internationalised domain matches in either form",
    entries: [{ level: "inbox", type: "block", entry: "Bücher.de" }],
    expect: { "a@bücher.de": "block", "a@xn--bcher-kva.de": "block", "a@shop.BÜCHER.de": "block", "a@buecher.de": "allow" }
  },
  {
    rule: "only the lists of the asked direction apply",
    direction: "receive",
    entries: [
      { level: "organization", type: "block", entry: "x@example.com", direction: "send" },
      { level: "organization", type: "allow", entry: "y@example.com", direction: "reply" },
      { level: "inbox", type: "block", entry: "z@example.com", direction: "receive" }
    ],
    expect: { "x@example.com": "allow", "w@example.com": "allow", "z@example.com": "block" }
  },
  {
    rule: "the lists of another inbox, another pod and another organization do not apply",
    entries: [
      { level: "other inbox", type: "block", entry: "x@example.com" },
      { level: "other pod", type: "block", entry: "x@example.com" },
      { level: "other organization", type: "block", entry: "x@example.com" },
      { level: "other inbox", type: "allow", entry: "only.example" },
      { level: "other pod", type: "allow", entry: "only.example" },
      { level: "other organization", type: "allow", entry: "only.example" }
    ],
    expect: { "x@example.com": "allow", "y@example.com": "allow" }
  }
]

const organization = (ownerEmail: string) =>
  Effect.gen(function*() {
    const { organization } = yield* (yield* Organizations).create({ ownerEmail, verified: true, plan: "scale" })
    const principal: Principal = { organizationId: organization.id, scope: { type: "organization" } }
    return principal
  })

/** A fresh world: organization with pod P (inboxes I and J) and pod Q; another organization. */
const world = Effect.gen(function*() {
  const pods = yield* Pods
  const inboxes = yield* Inboxes
  const owner = yield* organization("owner@example.com")
  const pod = yield* pods.create(owner, { name: "P" })
  const otherPod = yield* pods.create(owner, { name: "Q" })
  const inbox = yield* inboxes.create(owner, {}, pod.pod_id)
  const otherInbox = yield* inboxes.create(owner, {}, pod.pod_id)
  const stranger = yield* organization("stranger@example.com")
  return { owner, pod: pod.pod_id, otherPod: otherPod.pod_id, inbox: inbox.inbox_id, otherInbox: otherInbox.inbox_id, stranger }
})

for (const storage of storages()) {
  layer(engineLayer(storage.layer), { timeout: "120 seconds" })(`Lists.verdicts (${storage.name})`, (it) => {
    for (const c of CASES) {
      it.effect(c.rule, () =>
        Effect.gen(function*() {
          const w = yield* world
          for (const e of c.entries) {
            const path = { direction: e.direction ?? c.direction ?? "send", type: e.type }
            const none = { pod_id: undefined, inbox_id: undefined }
            const [principal, where] = e.level === "other organization" ? [w.stranger, none] : [w.owner, {
              organization: none,
              pod: { ...none, pod_id: w.pod },
              inbox: { ...none, inbox_id: w.inbox },
              "other inbox": { ...none, inbox_id: w.otherInbox },
              "other pod": { ...none, pod_id: w.otherPod }
            }[e.level]]
            // Through the catalogue, so the entry is validated and normalised as over REST.
            yield* Engine.use((engine) => engine.call("lists.create", { ...{ ...path, ...where }, ...{ entry: e.entry } }, { kind: "principal", principal: principal })).pipe(Effect.orDie)
          }
          const scope = { organizationId: w.owner.organizationId, podId: w.pod, inboxId: w.inbox }
          const verdicts = yield* (yield* Lists).verdicts(scope, c.direction ?? "send", Object.keys(c.expect))
          const expected = new Map(Object.entries(c.expect).map(([address, verdict]) => [address.toLowerCase(), verdict]))
          assert.deepStrictEqual(verdicts, expected)
        }))
    }

    it.effect("no addresses: an empty answer", () =>
      Effect.gen(function*() {
        const w = yield* world
        const verdicts = yield* (yield* Lists).verdicts({ organizationId: w.owner.organizationId, podId: w.pod, inboxId: w.inbox }, "send", [])
        assert.strictEqual(verdicts.size, 0)
      }))
  })
}
