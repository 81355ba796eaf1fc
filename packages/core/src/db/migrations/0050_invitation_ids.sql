-- An invitation has an id the owner names to revoke it (DELETE /auth/invitations/:invitation_id):
-- the token's hash is the row's key, and the token is the invitee's alone. Rows from before get
-- one derived from that hash, which reveals nothing of the token.
ALTER TABLE auth_tokens ADD COLUMN invitation_id text;
UPDATE auth_tokens SET invitation_id = 'inv_' || substr(md5(token_hash), 1, 24) WHERE purpose = 'invite';
CREATE UNIQUE INDEX auth_tokens_invitation ON auth_tokens (invitation_id) WHERE invitation_id IS NOT NULL;
