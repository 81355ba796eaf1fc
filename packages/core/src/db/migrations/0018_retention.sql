-- Retention (operating/Retention.ts) finds what it purges by age, oldest first, in small
-- batches: each finds its batch by an index instead of scanning the table.
CREATE INDEX messages_trash_age ON messages (updated_at) WHERE 'trash' = ANY(labels);
CREATE INDEX jobs_spent_age ON jobs (updated_at) WHERE state IN ('done', 'failed');
CREATE INDEX events_age ON events (created_at);
