-- An attachment that arrived inside a message is kept only inside its raw message
-- (blobs/parts.ts): its entry in `messages.attachments` has a `part` and no blob of its own,
-- so the reference counts skip it; the raw message's own reference keeps its bytes.
CREATE OR REPLACE FUNCTION messages_blob_refs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  attachment jsonb;
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM blob_refs_adjust(NEW.raw_sha256, NEW.size, 1);
    FOR attachment IN SELECT * FROM jsonb_array_elements(NEW.attachments) LOOP
      IF NOT attachment ? 'part' THEN
        PERFORM blob_refs_adjust(attachment->>'sha256', (attachment->>'size')::bigint, 1);
      END IF;
    END LOOP;
  ELSE
    PERFORM blob_refs_adjust(OLD.raw_sha256, OLD.size, -1);
    FOR attachment IN SELECT * FROM jsonb_array_elements(OLD.attachments) LOOP
      IF NOT attachment ? 'part' THEN
        PERFORM blob_refs_adjust(attachment->>'sha256', (attachment->>'size')::bigint, -1);
      END IF;
    END LOOP;
  END IF;
  RETURN NULL;
END;
$$;
