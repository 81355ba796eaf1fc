-- Which messages changed, so that a mailbox's sync after a change reads those messages only,
-- not the whole mailbox (mailboxes/Mailboxes.ts, `sync`). Before, every change (a delivery,
-- a label) made the next sync compare every message of the inbox with every UID of the
-- mailbox, twice over: at 100,000 messages most of a second of PostgreSQL's work per change,
-- and IDLE waits for it.
--
-- - imap_changed: a row per message stored or relabelled, with the counter value (imap_changes,
--   migration 0049) its statement raised the inbox's counter to. Written by the triggers that
--   already raise the counter, and only when they raised one (FOUND): an inbox no mail client
--   reads has no counter row, so its deliveries write nothing more than before. A deleted
--   message needs no row: its UIDs go with it (imap_uids' foreign key cascades).
-- - imap_mailboxes.synced: the counter value up to which the mailbox's UIDs follow the
--   messages (null: not known, the next sync compares the whole mailbox), and synced_rule,
--   which of INBOX's rules (a key without label_unauthenticated_read sees less) it followed.
--   Counter values are taken under the counter row's lock, so they are given in commit order:
--   every change at or below a value read is committed and logged.
-- - A sync prunes the log up to the lowest `synced` of the inbox's mailboxes; a mailbox not
--   synced for many changes is set back to null (it compares the whole mailbox next time)
--   rather than keeping the log long for it.
-- - imap_uids keeps a copy of what a mailbox's listing shows of its message (labels, size,
--   date), so a sync reads the mailbox's own narrow rows in UID order instead of joining every
--   message row of the inbox. The labels are kept by the relabel trigger below, and a sync
--   renews them for the messages the log names (a UID given while a relabel was in flight).
CREATE TABLE imap_changed (
  inbox_id   text NOT NULL REFERENCES imap_changes (inbox_id) ON DELETE CASCADE,
  modseq     bigint NOT NULL,
  message_id text NOT NULL
);
CREATE INDEX imap_changed_since ON imap_changed (inbox_id, modseq);

ALTER TABLE imap_uids ADD COLUMN labels text[], ADD COLUMN size integer, ADD COLUMN internal_date timestamptz;
UPDATE imap_uids u SET labels = m.labels, size = m.size, internal_date = m."timestamp" FROM messages m WHERE m.id = u.message_id;
ALTER TABLE imap_uids ALTER COLUMN labels SET NOT NULL, ALTER COLUMN size SET NOT NULL, ALTER COLUMN internal_date SET NOT NULL;

ALTER TABLE imap_mailboxes ADD COLUMN synced bigint;
ALTER TABLE imap_mailboxes ADD COLUMN synced_rule text;

-- Inserted messages: the counter as before, then the log, only for a counter raised.
CREATE FUNCTION imap_changes_stored() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE imap_changes c SET modseq = c.modseq + 1
    WHERE c.inbox_id IN (SELECT DISTINCT n.inbox_id FROM changed_rows n);
  IF FOUND THEN
    INSERT INTO imap_changed (inbox_id, modseq, message_id)
      SELECT n.inbox_id, c.modseq, n.id FROM changed_rows n JOIN imap_changes c ON c.inbox_id = n.inbox_id;
  END IF;
  RETURN NULL;
END;
$$;
DROP TRIGGER messages_imap_inserted ON messages;
CREATE TRIGGER messages_imap_inserted AFTER INSERT ON messages
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION imap_changes_stored();

-- Relabelled messages: as migration 0051 (the counter, then each UID row's modseq), the UID
-- rows' copy of the labels, and the log.
CREATE OR REPLACE FUNCTION imap_changes_relabelled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE imap_changes c SET modseq = c.modseq + 1
    WHERE c.inbox_id IN (SELECT DISTINCT n.inbox_id FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.labels IS DISTINCT FROM n.labels);
  IF FOUND THEN
    UPDATE imap_uids u SET modseq = c.modseq, labels = n.labels
      FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN imap_changes c ON c.inbox_id = n.inbox_id
      WHERE o.labels IS DISTINCT FROM n.labels AND u.message_id = n.id AND u.inbox_id = n.inbox_id;
    INSERT INTO imap_changed (inbox_id, modseq, message_id)
      SELECT n.inbox_id, c.modseq, n.id
      FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN imap_changes c ON c.inbox_id = n.inbox_id
      WHERE o.labels IS DISTINCT FROM n.labels;
  END IF;
  RETURN NULL;
END;
$$;
