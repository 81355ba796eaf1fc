-- A key's name and permissions can change (PATCH /v0/api-keys/:api_key_id, the agentmail
-- SDK's apiKeys.update): when, is updated_at. Keys never changed read their created_at.
ALTER TABLE api_keys ADD COLUMN updated_at timestamptz;
