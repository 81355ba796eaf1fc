-- An account owns nothing until its address is verified (issue 24, account pre-hijack): a
-- sign-up that is owed an organization (open sign-up, or the first account on a fresh
-- server) keeps its name here, and the organization is created when the address is
-- verified. NULL: none is owed (an invitee, or one already created).
ALTER TABLE users ADD COLUMN pending_organization text;

-- Accounts never verified expire; the retention purge finds them by age.
CREATE INDEX users_unverified ON users (created_at) WHERE email_verified_at IS NULL;
