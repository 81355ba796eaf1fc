-- Events made observable: the events list for pod-scoped keys, webhooks and their
-- deliveries, and the mail provider's events we have already applied.

-- Pod-scoped keys list the events of their pod, newest first.
CREATE INDEX events_pod ON events (pod_id, created_at DESC, id DESC) WHERE pod_id IS NOT NULL;

-- Webhooks (spec: Webhook). `pod_id` / `inbox_id` are the scope the webhook was created in
-- (the path, or the creating key's narrower scope), which decides who sees it;
-- `inbox_ids` / `pod_ids` narrow the events it receives within that scope.
CREATE TABLE webhooks (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  pod_id           text REFERENCES pods (id) ON DELETE CASCADE,
  inbox_id         text REFERENCES inboxes (id) ON DELETE CASCADE,
  url              text NOT NULL,
  secret           text NOT NULL,
  enabled          boolean NOT NULL,
  event_types      text[] NOT NULL,
  inbox_ids        text[] NOT NULL,
  pod_ids          text[] NOT NULL,
  -- custom request headers, name (lower case) to value; values are never shown again
  headers          jsonb NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX webhooks_org ON webhooks (organization_id, created_at DESC, id DESC);

-- One delivery of one event to one webhook. Written in the event's transaction, with the
-- durable job that makes its attempts (jobs/Jobs.ts, kind 'webhook.delivery'), so an event
-- that committed is delivered however the process dies.
CREATE TABLE webhook_deliveries (
  id               text PRIMARY KEY,
  webhook_id       text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  organization_id  text NOT NULL,
  event_id         text NOT NULL,
  event_type       text NOT NULL,
  -- 'pending', 'sending', 'delivered' or 'failed'
  status           text NOT NULL,
  status_code      integer,
  attempts         integer NOT NULL DEFAULT 0,
  error            text,
  next_attempt_at  timestamptz,
  last_attempt_at  timestamptz,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_page ON webhook_deliveries (webhook_id, created_at DESC, id DESC);

-- The mail provider's events already applied, by their webhook-id: a retry is answered
-- without applying it twice.
CREATE TABLE provider_events (
  webhook_id       text PRIMARY KEY,
  received_at      timestamptz NOT NULL
);
CREATE INDEX provider_events_age ON provider_events (received_at);

-- Provider events name a sent message by its Message-ID alone.
CREATE INDEX messages_sent_rfc ON messages (rfc_message_id) WHERE direction = 'sent';

-- Opens of messages sent with track_opens: counted per message; the first emits message.opened.
CREATE TABLE message_opens (
  message_id       text PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
  open_count       integer NOT NULL,
  via_proxy        boolean NOT NULL,
  first_opened_at  timestamptz NOT NULL,
  last_opened_at   timestamptz NOT NULL
);
