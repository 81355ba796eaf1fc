-- CONDSTORE (RFC 7162): each message of a mailbox has a mod-sequence, the value of the
-- inbox's change counter (imap_changes, migration 0049) at its last change that the mailbox
-- shows. It lives on the message's imap_uids row, not on messages: only an inbox a mail
-- client reads has such rows, so an inbox no client reads stores, reads and raises nothing
-- more than before, on delivery or anywhere else.
--
-- - A UID given by a sync (mailboxes/Mailboxes.ts) takes the counter as that statement sees
--   it, which is at least the value its message's insert raised it to: a new message's
--   modseq is above every HIGHESTMODSEQ told before it was stored.
-- - A flag kept beside the UID takes the value its statement raises the counter to.
-- - A change of labels (\Seen, \Flagged, \Draft, and which mailboxes hold it) takes, in the
--   trigger that already raises the counter, the counter's new value; the statement that
--   stamps the rows runs only when the counter of the inbox was raised (FOUND), so for an
--   inbox with no counter row (no client ever synced it) the trigger runs no statement more.
-- Rows from before take the counter's present value.
ALTER TABLE imap_uids ADD COLUMN modseq bigint NOT NULL DEFAULT 1;
UPDATE imap_uids u SET modseq = c.modseq FROM imap_changes c WHERE c.inbox_id = u.inbox_id;

CREATE OR REPLACE FUNCTION imap_changes_relabelled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE imap_changes c SET modseq = c.modseq + 1
    WHERE c.inbox_id IN (SELECT DISTINCT n.inbox_id FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.labels IS DISTINCT FROM n.labels);
  IF FOUND THEN
    UPDATE imap_uids u SET modseq = c.modseq
      FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN imap_changes c ON c.inbox_id = n.inbox_id
      WHERE o.labels IS DISTINCT FROM n.labels AND u.message_id = n.id AND u.inbox_id = n.inbox_id;
  END IF;
  RETURN NULL;
END;
$$;
