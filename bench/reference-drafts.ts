/**
 * The bare reference of the scheduled-send benchmark (bench/drafts.ts): a worker process
 * written the way a hand-written node + pg + nodemailer scheduler would be. It takes the due
 * rows of `ref_drafts` one at a time with `FOR UPDATE SKIP LOCKED` (so several processes
 * share the table and each row is sent once), relays the message with nodemailer to
 * REF_SMTP_URL, records it in `ref_sent` and deletes the row, in one transaction. REF_SLOTS
 * loops run side by side, as many as the engine's draft jobs per process; an idle loop looks
 * again after a second, as the engine's job worker does without a signal.
 */
import nodemailer from "nodemailer"
import pg from "pg"

const slots = Number(process.env["REF_SLOTS"] ?? "8")
const pool = new pg.Pool({ connectionString: process.env["REF_DATABASE_URL"], max: slots })
// Pooled, as the engine relays: a connection per message costs smtp-server's 100 ms greeting delay.
const relay = nodemailer.createTransport(`${process.env["REF_SMTP_URL"]!}?pool=true`)

const sendOne = async (): Promise<boolean> => {
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    const { rows } = await client.query(
      "SELECT * FROM ref_drafts WHERE send_at <= now() ORDER BY send_at LIMIT 1 FOR UPDATE SKIP LOCKED"
    )
    const row = rows[0]
    if (row === undefined) {
      await client.query("COMMIT")
      return false
    }
    await relay.sendMail({ from: row.sender, to: row.recipient, subject: row.subject, text: row.body })
    await client.query("INSERT INTO ref_sent (draft_id, sent_at) VALUES ($1, clock_timestamp())", [row.id])
    await client.query("DELETE FROM ref_drafts WHERE id = $1", [row.id])
    await client.query("COMMIT")
    return true
  } catch (error) {
    await client.query("ROLLBACK")
    throw error
  } finally {
    client.release()
  }
}

const loop = async () => {
  for (;;) {
    if (!(await sendOne())) await new Promise((r) => setTimeout(r, 1_000))
  }
}

for (let i = 0; i < slots; i++) void loop()
process.stdout.write("REF_DRAFTS_READY\n")
process.on("SIGTERM", () => process.exit(0))
