-- jobs_spent_age (0018) repeats jobs_finished (0003) column for column: every job that ends
-- wrote the same entry into two indexes. Retention's purge reads jobs_finished as well.
DROP INDEX jobs_spent_age;
