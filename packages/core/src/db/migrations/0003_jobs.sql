-- Durable jobs (jobs/Jobs.ts): webhook deliveries, scheduled drafts, domain checks. A job
-- is claimed by one worker at a time (FOR UPDATE SKIP LOCKED) with a lease that a crashed
-- worker lets run out, so no job is lost and none is worked twice at once.
CREATE TABLE jobs (
  id               text PRIMARY KEY,
  kind             text NOT NULL,
  -- at most one queued or running job per (kind, key): enqueueing it again replaces its payload and time
  key              text,
  payload          jsonb NOT NULL,
  run_at           timestamptz NOT NULL,
  -- 'queued', 'running', 'done' or 'failed'
  state            text NOT NULL,
  attempts         integer NOT NULL DEFAULT 0,
  lease_until      timestamptz,
  -- the claim a worker holds while it runs the job; its updates name it, so a worker whose
  -- lease ran out cannot finish a job another worker has taken over
  claim            text,
  last_error       text,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX jobs_due ON jobs (run_at) WHERE state = 'queued';
CREATE INDEX jobs_leased ON jobs (lease_until) WHERE state = 'running';
CREATE UNIQUE INDEX jobs_key ON jobs (kind, key) WHERE key IS NOT NULL AND state IN ('queued', 'running');
CREATE INDEX jobs_finished ON jobs (updated_at) WHERE state IN ('done', 'failed');
