-- Metric counters split in shards, so concurrent writers stop taking turns.
--
-- A counter row was one per (scope, metric, resolution, bucket), and every change adds to
-- it inside the writing transaction (0007). Every delivery into one organization therefore
-- locked the same rows (its organization's message_count, storage_bytes, thread_count and
-- message.received counters) until it committed: deliveries into an organization ran one
-- at a time, commit flush included, whatever the concurrency (about 100 messages/s measured
-- on PostgreSQL with 8 clients, where parsing alone allowed over 3,000).
--
-- Each row now has a shard, chosen by the writing connection (its backend pid modulo 16):
-- a connection runs one transaction at a time, so concurrent transactions write different
-- rows unless their pids meet modulo 16. Readers add the shards up. Counters stay exactly as
-- committed as the changes they count, and rows are still locked in one order per statement.
ALTER TABLE metric_counts ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE metric_counts DROP CONSTRAINT metric_counts_pkey;
ALTER TABLE metric_counts ADD PRIMARY KEY (scope_id, metric, resolution, bucket, shard);

CREATE OR REPLACE FUNCTION metric_add(org text, pod text, inbox text, name text, at timestamptz, delta bigint) RETURNS void LANGUAGE sql AS $$
  INSERT INTO metric_counts (scope_id, metric, resolution, bucket, value, organization_id, shard)
  SELECT s.id, name, r.res,
    CASE WHEN r.res = 0 THEN 'epoch'::timestamptz ELSE to_timestamp(floor(extract(epoch FROM at) / r.res) * r.res) END,
    delta, org, pg_backend_pid() % 16
  FROM unnest(ARRAY[org, pod, inbox]) WITH ORDINALITY AS s (id, n), unnest(ARRAY[0, 60, 3600]) AS r (res)
  WHERE s.id IS NOT NULL
  ORDER BY s.n, r.res
  ON CONFLICT (scope_id, metric, resolution, bucket, shard) DO UPDATE SET value = metric_counts.value + EXCLUDED.value
$$;
