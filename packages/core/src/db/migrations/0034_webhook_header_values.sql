-- Custom header values of a webhook are often credentials: they are kept like its signing
-- secret, sealed under INBOX_SECRET_KEY. The names stay readable (the API shows them) in
-- header_names; the values go to header_values as one JSON object of name to value, sealed
-- (`v1:...`) when the server has a key, plain JSON without one; NULL when there are none.
-- A migration cannot hold the key, so the rows written before are moved here as plain JSON
-- and the engine seals them at its next start with a key (shared/SecretRotation.ts).
ALTER TABLE webhooks ADD COLUMN header_names text[] NOT NULL DEFAULT '{}';
ALTER TABLE webhooks ADD COLUMN header_values text;
UPDATE webhooks SET header_names = ARRAY(SELECT jsonb_object_keys(headers) ORDER BY 1), header_values = headers::text
  WHERE headers <> '{}'::jsonb;
ALTER TABLE webhooks DROP COLUMN headers;
