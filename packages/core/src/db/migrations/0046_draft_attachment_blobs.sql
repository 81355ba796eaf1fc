-- A draft's inline attachments live in the blob store, as a message's do (drafts/Drafts.ts):
-- the row keeps each one's `sha256` and `size` in content->'attachments'. The database counts
-- the draft's references as it counts a message's (0002), so however a draft goes (sent,
-- deleted, with its inbox or organization) and whenever its attachments change, the bytes
-- are released. Attachments without a hash (by URL, or inline bytes of a row written before
-- this migration) hold no reference; Drafts converts those rows when they are next touched.
CREATE FUNCTION drafts_blob_refs_adjust(content jsonb, delta integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  attachment jsonb;
BEGIN
  FOR attachment IN SELECT * FROM jsonb_array_elements(coalesce(content->'attachments', '[]'::jsonb)) LOOP
    IF attachment ? 'sha256' THEN
      PERFORM blob_refs_adjust(attachment->>'sha256', (attachment->>'size')::bigint, delta);
    END IF;
  END LOOP;
END;
$$;

CREATE FUNCTION drafts_blob_refs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- New references first, so bytes kept across an update never drop to none.
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM drafts_blob_refs_adjust(NEW.content, 1);
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    PERFORM drafts_blob_refs_adjust(OLD.content, -1);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER drafts_blob_refs AFTER INSERT OR DELETE ON drafts
  FOR EACH ROW EXECUTE FUNCTION drafts_blob_refs();
CREATE TRIGGER drafts_blob_refs_update AFTER UPDATE OF content ON drafts
  FOR EACH ROW WHEN (OLD.content->'attachments' IS DISTINCT FROM NEW.content->'attachments')
  EXECUTE FUNCTION drafts_blob_refs();
