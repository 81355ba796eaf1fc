-- metric_bucket inlined into the statements that call it. It was declared IMMUTABLE over
-- extract(epoch FROM a timestamptz), which PostgreSQL rates STABLE: a function whose body is
-- less immutable than its declaration is never inlined, so every row metric_fold folds (five
-- a delivered message) ran it as a function call of its own, a statement of PostgreSQL's in
-- the background fold (bench/PROFILE.md, issue 29). The epoch of the difference from the
-- epoch is the same number, from IMMUTABLE operators only: now the planner inlines it.
CREATE OR REPLACE FUNCTION metric_bucket(at timestamptz, res integer) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN res = 0 THEN 'epoch'::timestamptz ELSE to_timestamp(floor(extract(epoch FROM at - 'epoch'::timestamptz) / res) * res) END
$$;
