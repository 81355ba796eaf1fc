-- Inbound mail asks, for every new message, which stored messages name it as a parent
-- (messages_parents: MessageStore's related query). With GIN's pending list, every such
-- lookup also scanned every entry added since the list was last merged into the index:
-- up to 4 MB of entries, about 0.5 to 1 ms per lookup under ingest (pnpm bench ingest).
-- Written straight into the index, an insert costs a few entries more (a message names a
-- handful of parents at most) and the lookup a walk down the tree.
ALTER INDEX messages_parents SET (fastupdate = off);
