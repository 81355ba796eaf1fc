-- The GIN index of message_search keeps new vectors in its pending list until the list
-- passes gin_pending_list_limit (the server's default, 4 MB) or a VACUUM merges it into the
-- index. Every scan of the index reads the whole list and tests each of its vectors: for an
-- inbox's search by a rare word (IMAP SEARCH TEXT, search/Search.ts) that list was most of
-- the statement whatever the inbox's size, and the planner, which costs the list in, chose
-- to read every row of the inbox instead. Where no autovacuum runs (PGlite always) nothing
-- but the limit ever merges the list. A small limit keeps each scan's share to a few dozen
-- pages, while an insert still goes to the list and is merged with a few dozen others:
-- writing each vector straight into the index (fastupdate off) multiplied the WAL of every
-- delivery. The table is analyzed here once, as autovacuum would have: where none runs, its
-- statistics were those of the migration that made it, and the planner, taking it for a
-- few pages, read every row of the inbox rather than the word's entries (db/Maintenance.ts
-- keeps them from then on). Measures in BENCHMARKS.md (issue 28).
ALTER INDEX message_search_vector SET (gin_pending_list_limit = 256);
SELECT gin_clean_pending_list('message_search_vector');
ANALYZE message_search;
