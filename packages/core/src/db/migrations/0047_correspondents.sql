-- Correspondents of an inbox (messages/Correspondents.ts): everyone it received mail from or
-- sent mail to, with the newest name seen, the time of the newest message and how many
-- messages; the compose box's recipient suggestions read them. A small table kept by the
-- database as messages are inserted (by any path: inbound, send, batch, IMAP), so a
-- suggestion reads a few rows of one inbox, never its messages. Hidden messages (spam,
-- blocked, unauthenticated, trash) and the inbox's own address are left out. Deleting a
-- message does not lower the counts: they are of messages exchanged, and their upkeep
-- stays off every delete path; an inbox's correspondents go with it.
CREATE TABLE correspondents (
  inbox_id      text NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
  -- lower case
  address       text NOT NULL,
  name          text,
  last_seen_at  timestamptz NOT NULL,
  messages      integer NOT NULL,
  PRIMARY KEY (inbox_id, address)
);
-- Newest first within an inbox: a suggestion walks this until it has its `limit` matches.
CREATE INDEX correspondents_recent ON correspondents (inbox_id, last_seen_at DESC, address);

-- The display name of `Name <address>` (quotes and their escapes removed), or NULL.
CREATE FUNCTION mailbox_name(display text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT nullif(btrim(regexp_replace(btrim(substring(display from '^(.*)<[^<>]*>\s*$'), ' "'), '\\(.)', '\1', 'g')), '')
$$;
-- The lower-case address of `Name <address>` or of a bare address.
CREATE FUNCTION mailbox_address(display text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT lower(btrim(coalesce(substring(display from '<([^<>]*)>\s*$'), display)))
$$;

-- A message's correspondents: the sender of received mail, every recipient (To, Cc, Bcc)
-- of sent mail, with the name the message gives them; none for hidden mail, and never the
-- inbox's own address. One definition for the trigger (over the statement's new rows) and
-- the backfill below (over the stored ones).
CREATE FUNCTION message_correspondents(m messages) RETURNS TABLE (inbox_id text, address text, name text, seen_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT m.inbox_id, p.address, p.name, m."timestamp"
    FROM (
      SELECT m.sender_address AS address, mailbox_name(m.sender) AS name WHERE m.direction = 'received'
      UNION ALL
      SELECT a.address, (SELECT mailbox_name(d) FROM unnest(m.recipients || coalesce(m.cc, '{}') || coalesce(m.bcc, '{}')) AS d
          WHERE mailbox_address(d) = a.address AND mailbox_name(d) IS NOT NULL LIMIT 1)
        FROM unnest(m.recipient_addresses) AS a(address) WHERE m.direction = 'sent'
    ) AS p
    WHERE NOT m.hidden AND p.address <> '' AND p.address <> (SELECT lower(i.email) FROM inboxes AS i WHERE i.id = m.inbox_id)
$$;

-- Adds the correspondents of the statement's new messages to the table. One statement in
-- (inbox, address) order: concurrent writers lock the rows they share in the same order.
CREATE FUNCTION correspondents_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO correspondents AS c (inbox_id, address, name, last_seen_at, messages)
    SELECT s.inbox_id, s.address, (array_agg(s.name ORDER BY s.seen_at DESC) FILTER (WHERE s.name IS NOT NULL))[1], max(s.seen_at), count(*)
      FROM new_messages AS n, LATERAL message_correspondents(n) AS s
      GROUP BY s.inbox_id, s.address ORDER BY s.inbox_id, s.address
  ON CONFLICT (inbox_id, address) DO UPDATE SET
    -- the newest name seen wins; a message without one keeps the name known
    name = CASE WHEN EXCLUDED.name IS NOT NULL AND EXCLUDED.last_seen_at >= c.last_seen_at THEN EXCLUDED.name ELSE coalesce(c.name, EXCLUDED.name) END,
    last_seen_at = greatest(c.last_seen_at, EXCLUDED.last_seen_at),
    messages = c.messages + EXCLUDED.messages;
  RETURN NULL;
END;
$$;

CREATE TRIGGER messages_correspondents AFTER INSERT ON messages
  REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT EXECUTE FUNCTION correspondents_add();

-- The messages stored before this migration.
INSERT INTO correspondents (inbox_id, address, name, last_seen_at, messages)
  SELECT s.inbox_id, s.address, (array_agg(s.name ORDER BY s.seen_at DESC) FILTER (WHERE s.name IS NOT NULL))[1], max(s.seen_at), count(*)
    FROM messages AS m, LATERAL message_correspondents(m) AS s
    GROUP BY s.inbox_id, s.address;
