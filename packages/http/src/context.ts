/** The id of the request being served, set by the app middleware and read by handlers. */
import { Context } from "effect"

export const RequestId = Context.Reference<string>("inbox/http/RequestId", { defaultValue: () => "req_unknown" })
