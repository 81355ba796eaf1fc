-- Drafts (drafts/Drafts.ts): unsent messages of an inbox, sent on demand or at `send_at`
-- by a durable job (jobs/Jobs.ts, kind `draft.send`).
CREATE TABLE drafts (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  pod_id           text NOT NULL,
  inbox_id         text NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
  -- the send fields as given (to, cc, bcc, reply_to, subject, text, html, track_opens,
  -- attachments, headers): only the keys ever set, so the API shows only those
  content          jsonb NOT NULL,
  -- the message this draft answers (a reply, or with reply_all a reply to everyone)
  reply_to_message_id text,
  reply_all        boolean NOT NULL DEFAULT false,
  send_at          timestamptz,
  -- NULL (a plain draft), 'scheduled', 'sending' or 'failed'
  send_status      text,
  -- names the current schedule: the job of an older schedule finds another token and does nothing
  schedule_token   text,
  -- while 'sending': who sends it and until when (a sender that died lets it run out)
  sending_claim    text,
  sending_until    timestamptz,
  -- the send status before 'sending', restored when a send on demand is refused
  status_before    text,
  failure_code     text,
  failure_message  text,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX drafts_inbox ON drafts (inbox_id, created_at DESC, id DESC);
CREATE INDEX drafts_org ON drafts (organization_id, created_at DESC, id DESC);
