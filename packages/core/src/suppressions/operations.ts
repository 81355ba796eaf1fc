/**
 * The suppression operations of the catalogue (spec: Suppressions). The spec names no
 * permission for them; ours (docs/lists.md, "Suppressions"): a suppression is the send policy's
 * automatic block list, so reading them needs `list_entry_read` and deleting one, which lets
 * mail reach an address that bounced or complained again, needs `list_entry_delete`; a
 * key that may only send cannot lift a suppression. Suppressions are added by provider
 * events and by the operator (`inboxctl suppressions add`), never through the API.
 */
import { Effect, Schema } from "effect"
import { operation, Output, route } from "../catalogue/Operation.ts"
import { EmailAddress } from "../shared/fields.ts"
import { listBody } from "../shared/pagination.ts"
import { decodeInput } from "../shared/validation.ts"
import { ListSuppressionsQuery, Suppression, suppressionAddress, Suppressions } from "./Suppressions.ts"

const COLUMNS = ["address", "reason", "inbox_id", "thread_id", "source_message_id", "created_at"]

export const listSuppressions = operation({
  name: "suppressions.list",
  summary: "List suppressed addresses (hard bounces, complaints, operator entries), newest first. Sends to them fail with recipient_suppressed.",
  routes: [route.get("/v0/suppressions")],
  access: { kind: "member", permission: "list_entry_read" },
  query: ListSuppressionsQuery,
  output: Output.list("suppressions", Suppression),
  mutates: false,
  mcp: { tool: "list_suppressions" },
  cli: { command: "suppressions list", columns: COLUMNS },
  run: ({ principal, input }) =>
    Suppressions.use((s) => Effect.map(s.list(principal, input), (page) => listBody("suppressions", page)))
})

const AddressParam = Schema.Struct({ address: EmailAddress })

export const deleteSuppression = operation({
  name: "suppressions.delete",
  summary: "Delete a suppression, so mail may be sent to the address again.",
  routes: [route.delete("/v0/suppressions/:address")],
  access: { kind: "member", permission: "list_entry_delete" },
  output: Output.empty,
  mutates: true,
  mcp: { tool: "delete_suppression" },
  cli: { command: "suppressions delete" },
  run: ({ principal, params }) =>
    Effect.gen(function*() {
      // A malformed address can never be suppressed: 400 validation_error naming it, before any read.
      const { address } = yield* decodeInput(AddressParam, { address: params.address })
      return yield* Suppressions.use((s) => s.delete(principal, suppressionAddress(address)))
    })
})

export const suppressionOperations = [listSuppressions, deleteSuppression]
