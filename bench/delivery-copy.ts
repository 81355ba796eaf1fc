/**
 * What one delivery writes, as SQL that copies it from a delivery our server stored under
 * new ids: its thread, its message (with its triggers: the search vector, blob references,
 * metric changes), its raw bytes and its `message.received` event. The PostgreSQL ceiling
 * (bench/ceiling.ts, through pgbench) and the storing SMTP reference
 * (bench/reference-smtp.ts) both write it, so they write the same rows ours does.
 */

/** The copy's templates: the `<prefix>_thread`, `_message`, `_event` and `_blob` tables, one row each, of the delivery stored last. */
export const templateTables = (prefix: string) => `
  DROP TABLE IF EXISTS ${prefix}_message, ${prefix}_thread, ${prefix}_event, ${prefix}_blob;
  CREATE TABLE ${prefix}_message AS SELECT * FROM messages WHERE direction = 'received' ORDER BY created_at DESC LIMIT 1;
  ALTER TABLE ${prefix}_message DROP COLUMN hidden;
  CREATE TABLE ${prefix}_thread AS SELECT * FROM threads WHERE id = (SELECT thread_id FROM ${prefix}_message);
  CREATE TABLE ${prefix}_event AS SELECT * FROM events WHERE event_type = 'message.received' ORDER BY created_at DESC LIMIT 1;
  CREATE TABLE ${prefix}_blob AS SELECT * FROM blob_data WHERE sha256 = (SELECT raw_sha256 FROM ${prefix}_message)`

/**
 * One delivery copied from the templates. `key` and `sha` are SQL expressions (a new row's
 * id suffix, its raw bytes' digest); `from` is an extra FROM item (pgbench's
 * `generate_series` of a batch), or ""; `blob`, an SQL expression of the raw bytes to
 * store instead of the template's.
 */
export const copyDelivery = (prefix: string, key: string, sha: string, from = "", blob?: string) => {
  const rows = from === "" ? "" : `, ${from}`
  return `INSERT INTO threads SELECT 't${prefix}' || ${key}, organization_id, pod_id, inbox_id, subject, preview, senders, recipients, labels, 'm${prefix}' || ${key}, message_count, size, received_at, sent_at, last_at, hidden, created_at, updated_at FROM ${prefix}_thread${rows};
INSERT INTO messages (id, organization_id, pod_id, inbox_id, thread_id, direction, state, rfc_message_id, in_reply_to, "references", parents, labels, "timestamp", sender, sender_address, recipients, cc, bcc, recipient_addresses, subject, preview, size, text, html, extracted_text, extracted_html, extracted_text_is_text, extracted_html_is_html, headers, attachments, raw_sha256, open_token, created_at, updated_at) SELECT 'm${prefix}' || ${key}, organization_id, pod_id, inbox_id, 't${prefix}' || ${key}, direction, state, 'r${prefix}' || ${key} || '@${prefix}', in_reply_to, "references", parents, labels, now(), sender, sender_address, recipients, cc, bcc, recipient_addresses, subject, preview, size, text, html, extracted_text, extracted_html, extracted_text_is_text, extracted_html_is_html, headers, attachments, ${sha}, NULL, now(), now() FROM ${prefix}_message${rows};
INSERT INTO blob_data (sha256, data) ${blob === undefined ? `SELECT ${sha}, data FROM ${prefix}_blob${rows}` : `VALUES (${sha}, ${blob})`} ON CONFLICT (sha256) DO NOTHING;
INSERT INTO events (id, organization_id, pod_id, inbox_id, event_type, payload, bodies_of, created_at) SELECT 'e${prefix}' || ${key}, organization_id, pod_id, inbox_id, event_type, payload, CASE WHEN bodies_of IS NULL THEN NULL ELSE 'm${prefix}' || ${key} END, now() FROM ${prefix}_event${rows};`
}
