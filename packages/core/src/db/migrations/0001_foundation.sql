-- Organizations, pods, inboxes, API keys, agent verification and the local mail outbox.
-- Timestamps are written by the engine from its Clock (never now()), so tests on a
-- TestClock and the API's millisecond precision agree.

CREATE TABLE organizations (
  id               text PRIMARY KEY,
  name             text NOT NULL,
  owner_email      text NOT NULL,
  email_verified   boolean NOT NULL DEFAULT false,
  is_agent         boolean NOT NULL DEFAULT false,
  send_locked      boolean NOT NULL DEFAULT false,
  plan             text NOT NULL DEFAULT 'free',
  plan_source      text NOT NULL DEFAULT 'free',
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);

CREATE TABLE pods (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  client_id        text,
  is_default       boolean NOT NULL DEFAULT false,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX pods_client_id ON pods (organization_id, client_id) WHERE client_id IS NOT NULL;
CREATE UNIQUE INDEX pods_one_default ON pods (organization_id) WHERE is_default;
CREATE INDEX pods_list ON pods (organization_id, created_at DESC, id DESC);

CREATE TABLE inboxes (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  pod_id           text NOT NULL REFERENCES pods (id),
  username         text NOT NULL,
  domain           text NOT NULL,
  email            text NOT NULL UNIQUE,
  display_name     text,
  client_id        text,
  status           text NOT NULL DEFAULT 'active',
  metadata         jsonb,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX inboxes_client_id ON inboxes (organization_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX inboxes_list ON inboxes (organization_id, created_at DESC, id DESC);
CREATE INDEX inboxes_pod_list ON inboxes (pod_id, created_at DESC, id DESC);

-- A key scoped to an inbox or pod goes with it: a deleted inbox's key no longer
-- authenticates (401), as the spec requires.
CREATE TABLE api_keys (
  id               text PRIMARY KEY,
  organization_id  text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name             text NOT NULL,
  prefix           text NOT NULL,
  secret_hash      text NOT NULL UNIQUE,
  pod_id           text REFERENCES pods (id) ON DELETE CASCADE,
  inbox_id         text REFERENCES inboxes (id) ON DELETE CASCADE,
  permissions      jsonb,
  created_at       timestamptz NOT NULL,
  revoked_at       timestamptz
);
CREATE INDEX api_keys_list ON api_keys (organization_id, created_at DESC, id DESC);

-- The human attached to an agent-created organization, and the pending one-time code.
CREATE TABLE agent_humans (
  organization_id  text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  human_email      text NOT NULL,
  replacements     integer NOT NULL DEFAULT 0,
  code_hash        text,
  code_expires_at  timestamptz,
  code_attempts    integer NOT NULL DEFAULT 0,
  verified_at      timestamptz,
  updated_at       timestamptz NOT NULL
);

-- Mail handed to the local transport when no SMTP relay is configured.
CREATE TABLE local_outbox (
  id               bigserial PRIMARY KEY,
  envelope_from    text NOT NULL,
  envelope_to      jsonb NOT NULL,
  subject          text,
  raw              bytea NOT NULL,
  created_at       timestamptz NOT NULL
);
