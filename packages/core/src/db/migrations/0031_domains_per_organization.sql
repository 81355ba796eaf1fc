-- Custom domains held by several organizations (domains/Domains.ts; README, "Custom
-- domains"). Before, the name alone was the key: an organization that added a domain and
-- never verified it kept every other organization from adding it, for good. Now each
-- organization may hold a name with its own verification token and DKIM key; the key is
-- the name and the organization (`domain_id` stays the name: every lookup by a caller is
-- scoped to its organization). At most one holder of a name is VERIFIED, which the unique
-- index below keeps true whatever the code does; the check takes the row locks of every
-- holder of the name, so two organizations verifying at the same moment end with one owner.
ALTER TABLE domains DROP CONSTRAINT domains_pkey;
ALTER TABLE domains ADD PRIMARY KEY (id, organization_id);
CREATE UNIQUE INDEX domains_verified ON domains (id) WHERE status = 'VERIFIED';

-- A domain's check job is keyed by its organization and name now (two holders of a name
-- are checked apart); the jobs queued before name only the domain, which was unique then.
UPDATE jobs j SET key = d.organization_id || '/' || d.id,
  payload = j.payload || jsonb_build_object('organization_id', d.organization_id)
FROM domains d
WHERE j.kind = 'domain.check' AND j.key = d.id AND j.state IN ('queued', 'running');
