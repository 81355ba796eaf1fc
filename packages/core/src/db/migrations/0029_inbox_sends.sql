-- The per-inbox cap of 100 sends per rolling 24 hours (sending/Sending.ts) counted the sent
-- messages still stored: deleting a sent message (or its thread) gave a send back, so a key
-- with message_delete could send without end. Each send is now a row of its own here, kept
-- 24 hours whatever happens to its message; a send refused at the hand-over gives its row back.
CREATE TABLE inbox_sends (
  inbox_id    text NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
  message_id  text NOT NULL,
  at          timestamptz NOT NULL
);
CREATE INDEX inbox_sends_window ON inbox_sends (inbox_id, at DESC);
CREATE INDEX inbox_sends_message ON inbox_sends (message_id);
INSERT INTO inbox_sends (inbox_id, message_id, at)
  SELECT inbox_id, id, "timestamp" FROM messages WHERE direction = 'sent' AND "timestamp" > now() - interval '24 hours';
