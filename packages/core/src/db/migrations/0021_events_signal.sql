-- Every inserted event signals its id on the shared channel (db/Signals.ts) by itself.
--
-- Events.record used to send the signal as a statement of its own (SELECT pg_notify), one
-- more round trip in every delivery. The trigger sends the same NOTIFY from the event's
-- INSERT: like any NOTIFY it is delivered when the transaction commits and never when it
-- rolls back, so nothing changes for listeners. The in-process signals of the embedded
-- database do not listen here; Events.record publishes to them itself.
CREATE FUNCTION events_signal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('inbox_signals', 'events ' || NEW.id);
  RETURN NULL;
END;
$$;

CREATE TRIGGER events_signal AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_signal();
