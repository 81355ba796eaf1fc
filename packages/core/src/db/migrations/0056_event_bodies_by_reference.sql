-- A `message.received` event's payload is the whole message, and a message's bodies (text,
-- HTML, their extracts) were written into it a second time on every delivery: for an HTML
-- message, twice the message row's bytes, stringified, sent and parsed into jsonb
-- (bench/PROFILE.md, issue 29). Now the payload holds the message without its bodies, and
-- `bodies_of` names the message whose row holds them: readers join them back
-- (events/Events.ts, `withBodies`). NULL when the event carries no bodies (every other type,
-- and a message whose bodies would take the event over about 1 MB: spec, Events). Events
-- written before keep their bodies in the payload and no `bodies_of`.
ALTER TABLE events ADD COLUMN bodies_of text;
