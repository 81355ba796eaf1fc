-- A draft may carry the caller's client_id (the agentmail SDK's and toolkit's clientId): a
-- second create with the same one in the same inbox answers the draft the first made, so a
-- retried create makes one draft.
ALTER TABLE drafts ADD COLUMN client_id text;
CREATE UNIQUE INDEX drafts_inbox_client_id ON drafts (inbox_id, client_id) WHERE client_id IS NOT NULL;
