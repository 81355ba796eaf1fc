-- Blob reference counts, kept by one statement per statement on `messages` instead of one
-- upsert per row; and attachments kept inside their raw message skipped.
--
-- 1. Counted per statement. The row trigger of 0002 bumped `blobs.refs` once per message
--    row, so a statement writing many messages that share bytes (one message to many
--    inboxes, one logo in many mails, a seed, an inbox deleted with its messages) updated
--    the same `blobs` row again and again in one transaction, and every update walks the
--    row versions the earlier ones left: quadratic (one INSERT of 8,000 messages sharing a
--    raw spent 18 times as long in the trigger as one of 2,000). Now the statement's rows are
--    grouped by hash and each `blobs` row is written once, in hash order (so two statements
--    lock shared rows in the same order). The order that keeps bytes safe from the sweeper
--    (blobs/Blobs.ts) is unchanged: the rows are counted, and locked, by the end of the
--    INSERT, before the caller stores the bytes.
-- 2. An attachment that arrived inside a message is kept only inside its raw message
--    (blobs/parts.ts): its entry in `messages.attachments` has a `part` and no blob of its
--    own, so it takes no reference; the raw message's own reference keeps its bytes.
DROP TRIGGER messages_blob_refs ON messages;
DROP FUNCTION messages_blob_refs();

-- The blobs a message row references: its raw message, and each attachment that is a blob of its own.
CREATE FUNCTION message_blob_refs(raw_sha256 text, size bigint, attachments jsonb) RETURNS TABLE (sha256 text, size bigint)
LANGUAGE sql IMMUTABLE AS $$
  SELECT raw_sha256, size
  UNION ALL
  SELECT a->>'sha256', (a->>'size')::bigint FROM jsonb_array_elements(attachments) AS a WHERE NOT a ? 'part'
$$;

CREATE FUNCTION messages_blob_refs_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO blobs AS b (sha256, size, refs)
    SELECT r.sha256, max(r.size), count(*)::int
      FROM changed AS m, LATERAL message_blob_refs(m.raw_sha256, m.size, m.attachments) AS r
      GROUP BY r.sha256 ORDER BY r.sha256
  ON CONFLICT (sha256) DO UPDATE SET refs = b.refs + EXCLUDED.refs;
  RETURN NULL;
END;
$$;

CREATE FUNCTION messages_blob_refs_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE blobs AS b SET refs = greatest(b.refs - d.n, 0)
    FROM (SELECT r.sha256, count(*)::int AS n
            FROM changed AS m, LATERAL message_blob_refs(m.raw_sha256, m.size, m.attachments) AS r
            GROUP BY r.sha256) AS d
    WHERE b.sha256 = d.sha256;
  RETURN NULL;
END;
$$;

CREATE TRIGGER messages_blob_refs_added AFTER INSERT ON messages
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION messages_blob_refs_added();
CREATE TRIGGER messages_blob_refs_removed AFTER DELETE ON messages
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION messages_blob_refs_removed();
