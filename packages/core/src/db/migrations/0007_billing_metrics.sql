-- Metrics counters, request limits shared across processes, and the API key cache's
-- invalidation signal.
--
-- Metrics (metrics/Metrics.ts) never scan messages or events: every write that changes a
-- metric adds to counters in the same transaction, by the triggers below, so a counter is
-- exactly as committed as the change it counts (a rolled-back send counts nothing).
-- A counter row is (scope, metric, resolution, bucket): scope is the organization, pod or
-- inbox id (each row of a change adds to all three); resolution 0 is the all-time running
-- total (bucket = epoch), 60 and 3600 are per-minute and per-hour sums, so any query reads
-- at most a few thousand rows whatever the volume. Metric names: the usage types
-- (`message_count`, ...), the event types of events/catalogue.ts, and
-- `recipients:<event type>` (recipients an event concerns, for per-recipient rates).
CREATE TABLE metric_counts (
  scope_id         text NOT NULL,
  metric           text NOT NULL,
  resolution       integer NOT NULL,
  bucket           timestamptz NOT NULL,
  value            bigint NOT NULL,
  organization_id  text NOT NULL,
  PRIMARY KEY (scope_id, metric, resolution, bucket)
);
CREATE INDEX metric_counts_org ON metric_counts (organization_id);

-- One statement for the (up to) nine rows of a change, in a fixed order, so two
-- transactions counting the same things lock the rows in the same order.
CREATE FUNCTION metric_add(org text, pod text, inbox text, name text, at timestamptz, delta bigint) RETURNS void LANGUAGE sql AS $$
  INSERT INTO metric_counts (scope_id, metric, resolution, bucket, value, organization_id)
  SELECT s.id, name, r.res,
    CASE WHEN r.res = 0 THEN 'epoch'::timestamptz ELSE to_timestamp(floor(extract(epoch FROM at) / r.res) * r.res) END,
    delta, org
  FROM unnest(ARRAY[org, pod, inbox]) WITH ORDINALITY AS s (id, n), unnest(ARRAY[0, 60, 3600]) AS r (res)
  WHERE s.id IS NOT NULL
  ORDER BY s.n, r.res
  ON CONFLICT (scope_id, metric, resolution, bucket) DO UPDATE SET value = metric_counts.value + EXCLUDED.value
$$;

-- A row that is created carries the engine's timestamp (its Clock); a deletion has none,
-- so the database's clock places it.
CREATE FUNCTION metric_usage_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'messages' THEN
    IF TG_OP = 'INSERT' THEN
      PERFORM metric_add(NEW.organization_id, NEW.pod_id, NEW.inbox_id, 'message_count', NEW.created_at, 1);
      PERFORM metric_add(NEW.organization_id, NEW.pod_id, NEW.inbox_id, 'storage_bytes', NEW.created_at, NEW.size);
    ELSE
      PERFORM metric_add(OLD.organization_id, OLD.pod_id, OLD.inbox_id, 'message_count', now(), -1);
      PERFORM metric_add(OLD.organization_id, OLD.pod_id, OLD.inbox_id, 'storage_bytes', now(), -OLD.size);
    END IF;
  ELSIF TG_TABLE_NAME = 'threads' THEN
    IF TG_OP = 'INSERT' THEN
      PERFORM metric_add(NEW.organization_id, NEW.pod_id, NEW.inbox_id, 'thread_count', NEW.created_at, 1);
    ELSE
      PERFORM metric_add(OLD.organization_id, OLD.pod_id, OLD.inbox_id, 'thread_count', now(), -1);
    END IF;
  ELSIF TG_TABLE_NAME = 'inboxes' THEN
    IF TG_OP = 'INSERT' THEN
      PERFORM metric_add(NEW.organization_id, NEW.pod_id, NULL, 'inbox_count', NEW.created_at, 1);
    ELSE
      PERFORM metric_add(OLD.organization_id, OLD.pod_id, NULL, 'inbox_count', now(), -1);
    END IF;
  ELSIF TG_TABLE_NAME = 'pods' THEN
    IF TG_OP = 'INSERT' THEN
      PERFORM metric_add(NEW.organization_id, NEW.id, NULL, 'pod_count', NEW.created_at, 1);
    ELSE
      PERFORM metric_add(OLD.organization_id, OLD.id, NULL, 'pod_count', now(), -1);
    END IF;
  ELSIF TG_TABLE_NAME = 'webhooks' THEN
    -- Not a usage type of the spec: kept for the billing summary's usage.webhooks.
    IF TG_OP = 'INSERT' THEN
      PERFORM metric_add(NEW.organization_id, NULL, NULL, 'webhook_count', NEW.created_at, 1);
    ELSE
      PERFORM metric_add(OLD.organization_id, NULL, NULL, 'webhook_count', now(), -1);
    END IF;
  ELSIF TG_TABLE_NAME = 'domains' THEN
    IF TG_OP = 'INSERT' THEN
      PERFORM metric_add(NEW.organization_id, NULL, NULL, 'domain_count', NEW.created_at, 1);
    ELSE
      PERFORM metric_add(OLD.organization_id, NULL, NULL, 'domain_count', now(), -1);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER metric_usage AFTER INSERT OR DELETE ON messages FOR EACH ROW EXECUTE FUNCTION metric_usage_rows();
CREATE TRIGGER metric_usage AFTER INSERT OR DELETE ON threads FOR EACH ROW EXECUTE FUNCTION metric_usage_rows();
CREATE TRIGGER metric_usage AFTER INSERT OR DELETE ON inboxes FOR EACH ROW EXECUTE FUNCTION metric_usage_rows();
CREATE TRIGGER metric_usage AFTER INSERT OR DELETE ON pods FOR EACH ROW EXECUTE FUNCTION metric_usage_rows();

-- Custom domains and webhooks arrive with their own migrations; count them (and backfill
-- their totals) when their tables exist.
DO $$
BEGIN
  IF to_regclass('domains') IS NOT NULL THEN
    EXECUTE 'CREATE TRIGGER metric_usage AFTER INSERT OR DELETE ON domains FOR EACH ROW EXECUTE FUNCTION metric_usage_rows()';
    EXECUTE 'INSERT INTO metric_counts (scope_id, metric, resolution, bucket, value, organization_id)
      SELECT organization_id, ''domain_count'', 0, ''epoch'', count(*), organization_id FROM domains GROUP BY organization_id';
  END IF;
  IF to_regclass('webhooks') IS NOT NULL THEN
    EXECUTE 'CREATE TRIGGER metric_usage AFTER INSERT OR DELETE ON webhooks FOR EACH ROW EXECUTE FUNCTION metric_usage_rows()';
    EXECUTE 'INSERT INTO metric_counts (scope_id, metric, resolution, bucket, value, organization_id)
      SELECT organization_id, ''webhook_count'', 0, ''epoch'', count(*), organization_id FROM webhooks GROUP BY organization_id';
  END IF;
END;
$$;

-- Every event counts once under its type and, for rates, once per recipient it concerns
-- (the `recipients` array of its payload member; 1 when it names none).
CREATE FUNCTION metric_event_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  recipients bigint;
BEGIN
  PERFORM metric_add(NEW.organization_id, NEW.pod_id, NEW.inbox_id, NEW.event_type, NEW.created_at, 1);
  SELECT coalesce(max(jsonb_array_length(member.value -> 'recipients')), 1) INTO recipients
    FROM jsonb_each(NEW.payload) AS member
    WHERE jsonb_typeof(member.value) = 'object' AND jsonb_typeof(member.value -> 'recipients') = 'array';
  PERFORM metric_add(NEW.organization_id, NEW.pod_id, NEW.inbox_id, 'recipients:' || NEW.event_type, NEW.created_at, recipients);
  RETURN NULL;
END;
$$;

CREATE TRIGGER metric_events AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION metric_event_row();

-- The rows that already exist become the starting totals (resolution 0 only: their past
-- buckets are not rebuilt, so series start at the migration).
INSERT INTO metric_counts (scope_id, metric, resolution, bucket, value, organization_id)
SELECT scope_id, metric, 0, 'epoch'::timestamptz, sum(value), organization_id FROM (
  SELECT organization_id AS scope_id, 'message_count' AS metric, count(*) AS value, organization_id FROM messages GROUP BY organization_id
  UNION ALL SELECT pod_id, 'message_count', count(*), organization_id FROM messages GROUP BY organization_id, pod_id
  UNION ALL SELECT inbox_id, 'message_count', count(*), organization_id FROM messages GROUP BY organization_id, inbox_id
  UNION ALL SELECT organization_id, 'storage_bytes', sum(size), organization_id FROM messages GROUP BY organization_id
  UNION ALL SELECT pod_id, 'storage_bytes', sum(size), organization_id FROM messages GROUP BY organization_id, pod_id
  UNION ALL SELECT inbox_id, 'storage_bytes', sum(size), organization_id FROM messages GROUP BY organization_id, inbox_id
  UNION ALL SELECT organization_id, 'thread_count', count(*), organization_id FROM threads GROUP BY organization_id
  UNION ALL SELECT pod_id, 'thread_count', count(*), organization_id FROM threads GROUP BY organization_id, pod_id
  UNION ALL SELECT inbox_id, 'thread_count', count(*), organization_id FROM threads GROUP BY organization_id, inbox_id
  UNION ALL SELECT organization_id, 'inbox_count', count(*), organization_id FROM inboxes GROUP BY organization_id
  UNION ALL SELECT pod_id, 'inbox_count', count(*), organization_id FROM inboxes GROUP BY organization_id, pod_id
  UNION ALL SELECT organization_id, 'pod_count', count(*), organization_id FROM pods GROUP BY organization_id
  UNION ALL SELECT id, 'pod_count', 1, organization_id FROM pods
) AS existing
GROUP BY scope_id, metric, organization_id;

-- Request limits shared by every process on this database (ratelimit/RateLimiter.ts): one
-- fixed-window counter per caller and policy. UNLOGGED: counters are worth nothing after a
-- crash, and skipping the WAL makes the per-request upsert cheaper.
CREATE UNLOGGED TABLE rate_counters (
  key              text PRIMARY KEY,
  window_start     bigint NOT NULL,
  count            integer NOT NULL
);

-- The API key cache of every process (apikeys/ApiKeys.ts) forgets a key the moment it is
-- revoked, changed or deleted, cascades included: the signal goes out on the Signals
-- channel (db/Signals.ts) when the transaction commits.
CREATE FUNCTION api_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('inbox_signals', 'api_keys ' || OLD.id);
  RETURN NULL;
END;
$$;

CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION api_keys_changed();

-- Billing (billing/Billing.ts): at most one subscription per organization, in the state its
-- provider's signed webhooks last reported. `provider_updated_at` is the provider's own
-- timestamp of that state, so an older event arriving late never overwrites a newer one;
-- `billing_events` remembers every provider event id, so a replayed webhook is a no-op.
CREATE TABLE subscriptions (
  organization_id          text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  provider                 text NOT NULL,
  provider_customer_id     text,
  provider_subscription_id text,
  plan                     text NOT NULL,
  "interval"               text NOT NULL,
  status                   text NOT NULL,
  current_period_end       timestamptz,
  cancel_at_period_end     boolean NOT NULL DEFAULT false,
  grace_ends_at            timestamptz,
  provider_updated_at      timestamptz NOT NULL,
  created_at               timestamptz NOT NULL,
  updated_at               timestamptz NOT NULL
);
CREATE UNIQUE INDEX subscriptions_provider ON subscriptions (provider, provider_subscription_id) WHERE provider_subscription_id IS NOT NULL;

CREATE TABLE billing_events (
  provider                 text NOT NULL,
  event_id                 text NOT NULL,
  received_at              timestamptz NOT NULL,
  PRIMARY KEY (provider, event_id)
);
