-- A message's search vector from bounded inputs. A tsvector holds at most 1 MB, and only
-- the body was cut (100,000 characters): a message whose subject, recipients or attachment
-- names held enough distinct words (a 300 KB subject, forty 36 KB file names) failed its
-- INSERT with "string is too long for tsvector", so it could never be stored and its sender
-- retried for days. Each input is now cut: subject and sender 1,000 characters, recipients
-- 20,000, the body 100,000 as before and attachment names 10,000. A distinct word costs a
-- vector at most about 6 bytes a character (a one-character word of 4 UTF-8 bytes: entry,
-- text, position), so 132,000 characters stay under 800 KB. Search finds words past a cut
-- no more (the message itself is stored whole).
CREATE OR REPLACE FUNCTION messages_search_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO message_search (message_id, organization_id, pod_id, inbox_id, thread_id, "timestamp", hidden, search)
  VALUES (NEW.id, NEW.organization_id, NEW.pod_id, NEW.inbox_id, NEW.thread_id, NEW."timestamp", NEW.hidden,
    inbox_search_vector(left(NEW.subject, 1000), 'A') ||
    inbox_search_vector(left(NEW.sender || ' ' || translate(NEW.sender_address, '@', ' '), 1000), 'B') ||
    inbox_search_vector(left(array_to_string(NEW.recipients || coalesce(NEW.cc, '{}') || coalesce(NEW.bcc, '{}'), ' ') || ' ' ||
      translate(array_to_string(NEW.recipient_addresses, ' '), '@', ' '), 20000), 'C') ||
    inbox_search_vector(left(coalesce(NEW.text, NEW.preview), 100000) || ' ' ||
      left(coalesce((SELECT string_agg(a->>'filename', ' ') FROM jsonb_array_elements(NEW.attachments) a), ''), 10000), 'D') ||
    array_to_tsvector(ARRAY[' inbox ' || NEW.inbox_id, ' pod ' || NEW.pod_id]))
  ON CONFLICT (message_id) DO UPDATE SET thread_id = EXCLUDED.thread_id, hidden = EXCLUDED.hidden, search = EXCLUDED.search;
  RETURN NULL;
END;
$$;
