-- Dashboard accounts (/auth): people, their memberships in organizations, sessions,
-- mailed one-time tokens (verification, password reset, invitation), two-step recovery
-- codes, and the counters that limit wrong passwords and codes. Secrets are stored only
-- as hashes: passwords with Argon2id, session ids, tokens and recovery codes with SHA-256
-- (they are long random values, so a fast hash is enough).

CREATE TABLE users (
  id                 text PRIMARY KEY,
  email              text NOT NULL UNIQUE,
  password_hash      text NOT NULL,
  email_verified_at  timestamptz,
  -- The secret of a set-up but not yet enabled authenticator is kept here too; enabled says which.
  totp_secret        text,
  totp_enabled       boolean NOT NULL DEFAULT false,
  -- The last accepted TOTP time step: a code is accepted once.
  totp_last_step     bigint,
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL
);

CREATE TABLE memberships (
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id          text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role             text NOT NULL,
  created_at       timestamptz NOT NULL,
  PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id, created_at);

CREATE TABLE sessions (
  id_hash          text PRIMARY KEY,
  user_id          text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  organization_id  text REFERENCES organizations (id) ON DELETE SET NULL,
  csrf_token       text NOT NULL,
  created_at       timestamptz NOT NULL,
  last_seen_at     timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE auth_tokens (
  token_hash       text PRIMARY KEY,
  purpose          text NOT NULL,
  email            text NOT NULL,
  user_id          text REFERENCES users (id) ON DELETE CASCADE,
  organization_id  text REFERENCES organizations (id) ON DELETE CASCADE,
  role             text,
  invited_by       text,
  expires_at       timestamptz NOT NULL,
  used_at          timestamptz,
  created_at       timestamptz NOT NULL
);

CREATE TABLE recovery_codes (
  user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  code_hash  text NOT NULL,
  used_at    timestamptz,
  PRIMARY KEY (user_id, code_hash)
);

-- Wrong passwords and codes, per account and per client IP, in fixed windows. Counted in
-- the database so every server process sees the same count.
CREATE TABLE auth_attempts (
  key           text PRIMARY KEY,
  window_start  timestamptz NOT NULL,
  failures      integer NOT NULL
);

-- One row once the first account exists: the first person to sign up on a fresh server
-- owns the first organization, and only one can be first.
CREATE TABLE auth_first_account (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  user_id    text NOT NULL
);
