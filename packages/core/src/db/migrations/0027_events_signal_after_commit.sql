-- Events are signalled by the server once their transaction has committed
-- (db/Signals.ts), no longer by a trigger inside it: PostgreSQL runs the commits of
-- transactions that sent a NOTIFY one at a time.
DROP TRIGGER events_signal ON events;
DROP FUNCTION events_signal();
