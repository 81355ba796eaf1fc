-- Sends left in `sending` (a process died between the relay and its commit) are found by
-- Sending.recoverStale, every minute in every server process and once at start. Without an
-- index that was a scan of every message: 310 ms of the embedded server's start at 100,000
-- messages, and a full scan a minute on PostgreSQL at any size. Messages in `sending` are
-- few at any time, so the partial index stays small.
CREATE INDEX messages_sending ON messages (updated_at) WHERE state = 'sending';
