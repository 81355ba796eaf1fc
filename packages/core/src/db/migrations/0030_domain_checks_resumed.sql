-- Before this version a domain's background check stopped after its first run: the job
-- enqueued its successor under its own key while it was running, which only moved its own
-- time (Domains.ts now gives the job back, due at the next check). Every domain without a
-- queued or running check gets one, due now, so the schedule starts again on upgrade.
INSERT INTO jobs (id, kind, key, payload, run_at, state, attempts, created_at, updated_at)
SELECT 'job_' || substr(md5(random()::text || d.id), 1, 24), 'domain.check', d.id, jsonb_build_object('domain', d.id),
  now(), 'queued', 0, now(), now()
FROM domains d
WHERE NOT EXISTS (
  SELECT 1 FROM jobs j WHERE j.kind = 'domain.check' AND j.key = d.id AND j.state IN ('queued', 'running')
);
