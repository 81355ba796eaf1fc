-- Custom domains (domains/Domains.ts). The id is the domain name in its ASCII, lower-case
-- form: a name is hosted once on the whole server (403 already_exists), whichever
-- organization added it first. pod_id is set for a domain added under a pod.
CREATE TABLE domains (
  id                  text PRIMARY KEY,
  organization_id     text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  pod_id              text REFERENCES pods (id) ON DELETE CASCADE,
  feedback_enabled    boolean NOT NULL DEFAULT false,
  subdomains_enabled  boolean NOT NULL DEFAULT false,
  tracking_enabled    boolean NOT NULL DEFAULT false,
  -- NOT_STARTED, PENDING, VERIFYING, VERIFIED, FAILED (README, "Custom domains")
  status              text NOT NULL,
  reason              text,
  -- the status of each record at the last check: [{ type, name, status }]
  record_status       jsonb NOT NULL DEFAULT '[]',
  verification_token  text NOT NULL,
  dkim_selector       text NOT NULL,
  dkim_public_key     text NOT NULL,
  -- AES-256-GCM under INBOX_SECRET_KEY (domains/dkim.ts); never leaves the engine
  dkim_private_key    text NOT NULL,
  verified_at         timestamptz,
  checked_at          timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL
);
CREATE INDEX domains_list ON domains (organization_id, created_at DESC, id DESC);
