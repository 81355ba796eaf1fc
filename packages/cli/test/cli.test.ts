/**
 * inboxctl on the embedded database, the whole flow (cli-flow.ts); cli-postgres.test.ts runs
 * it on PostgreSQL beside this file.
 */
import { cliFlow, pgliteStorage } from "./cli-flow.ts"

cliFlow(pgliteStorage())
