-- Messaging: content-addressed blobs, threads, messages, events, allow/block lists,
-- suppressions, idempotency keys and send counters. Every tenant row carries its
-- organization, pod and inbox ids, so one visibility condition (access/visibility.ts)
-- serves every query and lists never join to find their scope.

-- Bytes (raw messages, attachments) by sha256, with the number of stored messages that
-- reference them. The bytes live in the BlobStore; the triggers below count references,
-- and a row whose count fell to 0 is swept (bytes deleted, then the row): blobs/Blobs.ts.
CREATE TABLE blobs (
  sha256           text PRIMARY KEY,
  size             bigint NOT NULL,
  refs             integer NOT NULL
);
CREATE INDEX blobs_unreferenced ON blobs (sha256) WHERE refs = 0;

-- The PostgreSQL BlobStore's bytes (used when it is the configured store). Stored
-- uncompressed (EXTERNAL): the store reads a large value a piece at a time with substring,
-- which then fetches only the TOAST chunks of that piece instead of inflating the whole
-- value for every piece. Mail that compresses well is mostly text, and small.
CREATE TABLE blob_data (
  sha256           text PRIMARY KEY,
  data             bytea NOT NULL
);
ALTER TABLE blob_data ALTER COLUMN data SET STORAGE EXTERNAL;

-- Secrets the server makes for itself once and shares between its processes (the key that
-- signs download URLs).
CREATE TABLE server_secrets (
  name             text PRIMARY KEY,
  value            text NOT NULL,
  created_at       timestamptz NOT NULL
);

-- A conversation in one inbox. Its summary fields are kept in step with its messages by
-- the messages service, in the transaction that changes them.
CREATE TABLE threads (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  pod_id           text NOT NULL,
  inbox_id         text NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
  subject          text NOT NULL,
  preview          text NOT NULL,
  senders          text[] NOT NULL,
  recipients       text[] NOT NULL,
  labels           text[] NOT NULL,
  last_message_id  text NOT NULL,
  message_count    integer NOT NULL,
  size             bigint NOT NULL,
  received_at      timestamptz,
  sent_at          timestamptz,
  -- time of the newest message: lists are ordered by it (newest activity first)
  last_at          timestamptz NOT NULL,
  -- every message carries a hidden label (spam, blocked, unauthenticated, trash)
  hidden           boolean NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX threads_inbox ON threads (inbox_id, last_at DESC, id DESC);
CREATE INDEX threads_pod ON threads (pod_id, last_at DESC, id DESC);
CREATE INDEX threads_org ON threads (organization_id, last_at DESC, id DESC);

CREATE TABLE messages (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  pod_id           text NOT NULL,
  inbox_id         text NOT NULL REFERENCES inboxes (id) ON DELETE CASCADE,
  thread_id        text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
  -- 'received' or 'sent'
  direction        text NOT NULL,
  -- sent messages: 'sending' from the moment the send is recorded until the relay accepted
  -- it ('sent'); received messages are 'stored'
  state            text NOT NULL,
  rfc_message_id   text NOT NULL,
  in_reply_to      text,
  "references"     text[],
  -- In-Reply-To and References together: found by a message that arrives after its replies
  parents          text[] NOT NULL,
  labels           text[] NOT NULL,
  hidden           boolean GENERATED ALWAYS AS (labels && ARRAY['spam', 'blocked', 'unauthenticated', 'trash']::text[]) STORED,
  "timestamp"      timestamptz NOT NULL,
  sender           text NOT NULL,
  sender_address   text NOT NULL,
  recipients       text[] NOT NULL,
  cc               text[],
  bcc              text[],
  -- lower-case addresses of To, Cc (and Bcc on sent mail), for the `to` filter
  recipient_addresses text[] NOT NULL,
  subject          text NOT NULL,
  preview          text NOT NULL,
  size             integer NOT NULL,
  text             text,
  html             text,
  extracted_text   text,
  extracted_html   text,
  headers          jsonb NOT NULL,
  -- [{ attachment_id, filename?, content_type, content_disposition, size, content_id?, sha256 }]
  attachments      jsonb NOT NULL,
  raw_sha256       text NOT NULL,
  open_token       text UNIQUE,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
-- A forwarder's retry of a message already stored is recognised by its Message-ID.
CREATE UNIQUE INDEX messages_rfc ON messages (inbox_id, direction, rfc_message_id);
CREATE INDEX messages_list ON messages (inbox_id, "timestamp" DESC, id DESC) WHERE NOT hidden;
CREATE INDEX messages_list_all ON messages (inbox_id, "timestamp" DESC, id DESC);
CREATE INDEX messages_from ON messages (inbox_id, sender_address, "timestamp" DESC, id DESC);
CREATE INDEX messages_labels ON messages USING gin (labels);
CREATE INDEX messages_to ON messages USING gin (recipient_addresses);
CREATE INDEX messages_parents ON messages USING gin (parents);
CREATE INDEX messages_thread ON messages (thread_id, "timestamp", id);
CREATE INDEX messages_sent ON messages (inbox_id, "timestamp") WHERE direction = 'sent';

-- Reference counts of blobs, kept by the database itself so every way a message goes
-- (deleted alone, with its thread, its inbox or its organization) releases its bytes.
CREATE FUNCTION blob_refs_adjust(sha text, bytes bigint, delta integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF delta > 0 THEN
    INSERT INTO blobs (sha256, size, refs) VALUES (sha, bytes, delta)
      ON CONFLICT (sha256) DO UPDATE SET refs = blobs.refs + delta;
  ELSE
    UPDATE blobs SET refs = greatest(refs + delta, 0) WHERE sha256 = sha;
  END IF;
END;
$$;

CREATE FUNCTION messages_blob_refs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  attachment jsonb;
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM blob_refs_adjust(NEW.raw_sha256, NEW.size, 1);
    FOR attachment IN SELECT * FROM jsonb_array_elements(NEW.attachments) LOOP
      PERFORM blob_refs_adjust(attachment->>'sha256', (attachment->>'size')::bigint, 1);
    END LOOP;
  ELSE
    PERFORM blob_refs_adjust(OLD.raw_sha256, OLD.size, -1);
    FOR attachment IN SELECT * FROM jsonb_array_elements(OLD.attachments) LOOP
      PERFORM blob_refs_adjust(attachment->>'sha256', (attachment->>'size')::bigint, -1);
    END LOOP;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER messages_blob_refs AFTER INSERT OR DELETE ON messages
  FOR EACH ROW EXECUTE FUNCTION messages_blob_refs();

-- Everything the service does, as events (catalogue: events/catalogue.ts). A change and
-- its event are written in one transaction.
CREATE TABLE events (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  pod_id           text,
  inbox_id         text REFERENCES inboxes (id) ON DELETE CASCADE,
  event_type       text NOT NULL,
  payload          jsonb NOT NULL,
  created_at       timestamptz NOT NULL
);
CREATE INDEX events_org ON events (organization_id, created_at DESC, id DESC);
CREATE INDEX events_inbox ON events (inbox_id, created_at DESC, id DESC) WHERE inbox_id IS NOT NULL;

-- Allow and block lists at organization, pod and inbox scope. `scope_id` is the
-- organization, pod or inbox the entry belongs to; pod_id and inbox_id are set as far as
-- the scope reaches, for visibility. `entry` is in normal form (lower case, ASCII domain).
-- The key puts entry before list_type: the verdict on every send and arrival looks up
-- candidate entries at three scopes whatever their type (lists/Lists.ts, verdicts); the
-- page index serves listing one list and "is this allow list non-empty".
CREATE TABLE list_entries (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  scope            text NOT NULL,
  scope_id         text NOT NULL,
  pod_id           text REFERENCES pods (id) ON DELETE CASCADE,
  inbox_id         text REFERENCES inboxes (id) ON DELETE CASCADE,
  direction        text NOT NULL,
  list_type        text NOT NULL,
  entry            text NOT NULL,
  reason           text,
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (scope_id, direction, entry, list_type)
);
CREATE INDEX list_entries_page ON list_entries (scope_id, direction, list_type, created_at DESC, entry DESC);

-- Addresses that bounced hard or complained: sends to them are refused.
CREATE TABLE suppressions (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  address          text NOT NULL,
  reason           text NOT NULL,
  source_message_id text,
  pod_id           text,
  inbox_id         text,
  thread_id        text,
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (organization_id, address)
);
CREATE INDEX suppressions_page ON suppressions (organization_id, created_at DESC, address DESC);

-- Idempotency-Key of send routes: the first request's answer, kept 24 hours.
CREATE TABLE idempotency_keys (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  key              text NOT NULL,
  route            text NOT NULL,
  request_hash     text NOT NULL,
  -- 'pending' while the first request runs (until `lease_until`), then 'done'
  state            text NOT NULL,
  lease_until      timestamptz NOT NULL,
  response         jsonb,
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (organization_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (created_at);

-- Sends per organization and day (UTC), for the monthly and Free daily plan limits.
CREATE TABLE send_counts (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  day              date NOT NULL,
  count            integer NOT NULL,
  PRIMARY KEY (organization_id, day)
);
