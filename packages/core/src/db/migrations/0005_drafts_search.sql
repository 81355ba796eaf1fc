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

-- Search (search/Search.ts). Any language's text is findable with one configuration: the
-- language-neutral `simple` parser and dictionary (no stemming, no stop words), after
-- lower-casing and folding accents with `unaccent` (é, ë and e match; ß matches ss). The
-- extension lives in `public` so every schema on a server shares it (PostgreSQL installs an
-- extension once per database); it is a trusted extension, so a database owner may create it.
CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public;

-- One field's text as a weighted vector. `<` and `>` become spaces first: the parser would
-- otherwise read `Ann <ann@example.org>` or a `«quote»` folded to `<<quote>>` as a tag and skip it.
CREATE FUNCTION inbox_search_vector(value text, weight "char") RETURNS tsvector LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT setweight(to_tsvector('simple'::regconfig, public.unaccent('public.unaccent'::regdictionary, translate(lower(coalesce(value, '')), '<>', '  '))), weight)
$$;

-- One term of a query, folded and parsed exactly as documents are, so they always agree: a
-- phrase of the term's words, restricted to the given weights (A subject, B from, C to),
-- with a prefix match on its last word when asked.
CREATE FUNCTION inbox_search_query(term text, weights text, prefix boolean) RETURNS tsquery LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  q tsquery := phraseto_tsquery('simple'::regconfig, public.unaccent('public.unaccent'::regdictionary, translate(lower(term), '<>', '  ')));
  t text;
BEGIN
  IF numnode(q) = 0 THEN RETURN q; END IF;
  t := q::text;
  IF weights <> '' THEN t := regexp_replace(t, '(''(?:[^'']|'''')*'')', '\1:' || weights, 'g'); END IF;
  IF prefix THEN t := t || CASE WHEN weights <> '' THEN '*' ELSE ':*' END; END IF;
  RETURN t::tsquery;
END;
$$;

-- The search vector of each message, in a table of its own: a tsvector column on `messages`
-- would come back from every `SELECT *` there, and the SQL driver cannot decode one. The
-- row carries the scope and time of its message, so a search takes its newest candidates
-- from this table's indexes alone; it goes with its message (ON DELETE CASCADE).
CREATE TABLE message_search (
  message_id       text PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
  organization_id  text NOT NULL,
  pod_id           text NOT NULL,
  inbox_id         text NOT NULL,
  thread_id        text NOT NULL,
  "timestamp"      timestamptz NOT NULL,
  search           tsvector NOT NULL
);
CREATE INDEX message_search_vector ON message_search USING gin (search);
CREATE INDEX message_search_inbox ON message_search (inbox_id, "timestamp" DESC, message_id DESC);
CREATE INDEX message_search_pod ON message_search (pod_id, "timestamp" DESC, message_id DESC);
CREATE INDEX message_search_org ON message_search (organization_id, "timestamp" DESC, message_id DESC);

-- The vector of a message: subject (A), from (B), to, cc and bcc (C), body and attachment
-- names (D). Addresses are also split at `@` so `from:example.org` finds the domain. The body
-- is cut at 100,000 characters: a tsvector holds at most 1 MB, and positions stop at 16,383.
CREATE FUNCTION messages_search_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO message_search (message_id, organization_id, pod_id, inbox_id, thread_id, "timestamp", search)
  VALUES (NEW.id, NEW.organization_id, NEW.pod_id, NEW.inbox_id, NEW.thread_id, NEW."timestamp",
    inbox_search_vector(NEW.subject, 'A') ||
    inbox_search_vector(NEW.sender || ' ' || translate(NEW.sender_address, '@', ' '), 'B') ||
    inbox_search_vector(array_to_string(NEW.recipients || coalesce(NEW.cc, '{}') || coalesce(NEW.bcc, '{}'), ' ') || ' ' ||
      translate(array_to_string(NEW.recipient_addresses, ' '), '@', ' '), 'C') ||
    inbox_search_vector(left(coalesce(NEW.text, NEW.preview), 100000) || ' ' ||
      coalesce((SELECT string_agg(a->>'filename', ' ') FROM jsonb_array_elements(NEW.attachments) a), ''), 'D'))
  ON CONFLICT (message_id) DO UPDATE SET thread_id = EXCLUDED.thread_id, search = EXCLUDED.search;
  RETURN NULL;
END;
$$;

CREATE TRIGGER messages_search AFTER INSERT OR UPDATE OF thread_id, subject, sender, sender_address, recipients, cc, bcc, recipient_addresses, text, preview, attachments
  ON messages FOR EACH ROW EXECUTE FUNCTION messages_search_index();
UPDATE messages SET subject = subject;
