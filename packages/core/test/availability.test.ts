/**
 * What counts as the database being unreachable (db/Availability.ts), decided once from a
 * failure's Cause: a connection the driver could not open, lost or timed out, or a server
 * saying it is shutting down or starting up. A refused statement is a fault, not an outage.
 * The real outage (a PostgreSQL stopped and started under a running server) is
 * packages/http/test/database-outage.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { isDatabaseUnreachable } from "@inbox/core/internal"
import { Cause } from "effect"
import { SqlError } from "effect/sql"

const connection = (message: string) =>
  new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause: new Error(message), message: "PgConnection: Failed to connect", operation: "connect" }) })

const serverSaid = (code: string) =>
  new SqlError.SqlError({ reason: new SqlError.UnknownError({ cause: Object.assign(new Error("server message"), { code }), message: "PgConnection: Query failed" }) })

describe("isDatabaseUnreachable", () => {
  it("is true for a refused, closed or timed-out connection, as a defect or a failure, wrapped or not", () => {
    assert.isTrue(isDatabaseUnreachable(Cause.die(connection("connect ECONNREFUSED 127.0.0.1:5432"))))
    assert.isTrue(isDatabaseUnreachable(Cause.fail(connection("Connection closed"))))
    assert.isTrue(isDatabaseUnreachable(Cause.die(new Error("a job failed", { cause: connection("Connection timed out") }))))
  })

  it("is true when the server says it is shutting down or starting up (57P01, 57P02, 57P03)", () => {
    for (const code of ["57P01", "57P02", "57P03"]) assert.isTrue(isDatabaseUnreachable(Cause.die(serverSaid(code))), code)
  })

  it("is false for a refused statement, another defect or an interruption", () => {
    assert.isFalse(isDatabaseUnreachable(Cause.die(serverSaid("23505"))))
    assert.isFalse(isDatabaseUnreachable(Cause.die(new SqlError.SqlError({ reason: new SqlError.SqlSyntaxError({ cause: new Error("syntax"), message: "bad" }) }))))
    assert.isFalse(isDatabaseUnreachable(Cause.die(new Error("boom"))))
    assert.isFalse(isDatabaseUnreachable(Cause.interrupt()))
  })
})
