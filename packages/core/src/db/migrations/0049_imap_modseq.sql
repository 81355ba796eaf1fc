-- The change counter of an inbox as IMAP sees it (mailboxes/Mailboxes.ts): `modseq` goes up
-- in the same transaction as anything that may change what a mailbox of the inbox shows (a
-- message stored, relabelled or deleted; a flag kept beside a UID, raised by the statement
-- that keeps it in mailboxes/Mailboxes.ts), so a session learns
-- whether anything changed by reading one row, instead of comparing the whole mailbox. It is
-- the HIGHESTMODSEQ of every mailbox of the inbox (RFC 7162 lets it rise for changes a
-- mailbox does not hold).
--
-- The row is made by the first sync of the inbox; the triggers only raise a row that exists,
-- so an inbox no mail client reads pays one index probe per statement, and a statement
-- takes no lock it did not already need. Triggers, like the correspondents of 0047, so
-- every write path (inbound, send, batch, IMAP, API) raises it without knowing of it.
CREATE TABLE imap_changes (
  inbox_id text PRIMARY KEY REFERENCES inboxes (id) ON DELETE CASCADE,
  modseq   bigint NOT NULL
);

CREATE FUNCTION imap_changes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE imap_changes c SET modseq = c.modseq + 1
    WHERE c.inbox_id IN (SELECT DISTINCT n.inbox_id FROM changed_rows n);
  RETURN NULL;
END;
$$;

-- An update raises the counter only when a message's labels changed: its state, search
-- text or delivery do not change what IMAP shows.
CREATE FUNCTION imap_changes_relabelled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE imap_changes c SET modseq = c.modseq + 1
    WHERE c.inbox_id IN (SELECT DISTINCT n.inbox_id FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.labels IS DISTINCT FROM n.labels);
  RETURN NULL;
END;
$$;

CREATE TRIGGER messages_imap_inserted AFTER INSERT ON messages
  REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION imap_changes_inserted();
CREATE TRIGGER messages_imap_deleted AFTER DELETE ON messages
  REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION imap_changes_inserted();
CREATE TRIGGER messages_imap_relabelled AFTER UPDATE ON messages
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION imap_changes_relabelled();
