-- IMAP's view of an inbox (mailboxes/Mailboxes.ts). Each mailbox of an inbox (INBOX, Sent,
-- Trash, Junk, Drafts, a user label) keeps its UIDVALIDITY and the next UID in
-- imap_mailboxes, and the UID of each message it holds in imap_uids. UIDs are given under
-- the mailbox row's lock, so two server processes on one database never give one UID twice
-- and never give a smaller one later; a message that leaves the mailbox loses its row (the
-- clients see EXPUNGE) and gets a new UID if it comes back, as RFC 9051 requires.
CREATE TABLE imap_mailboxes (
  inbox_id    text NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
  name        text NOT NULL,
  uidvalidity bigint NOT NULL,
  uidnext     bigint NOT NULL,
  -- created by a client (CREATE): listed while it holds no message
  created     boolean NOT NULL DEFAULT false,
  PRIMARY KEY (inbox_id, name)
);

CREATE TABLE imap_uids (
  inbox_id   text NOT NULL,
  mailbox    text NOT NULL,
  uid        bigint NOT NULL,
  message_id text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  -- IMAP flags with no label of their own (\Deleted, \Answered, keywords), per mailbox
  flags      text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (inbox_id, mailbox, uid),
  FOREIGN KEY (inbox_id, mailbox) REFERENCES imap_mailboxes (inbox_id, name) ON DELETE CASCADE
);
CREATE UNIQUE INDEX imap_uids_message ON imap_uids (inbox_id, mailbox, message_id);
CREATE INDEX imap_uids_message_id ON imap_uids (message_id);
