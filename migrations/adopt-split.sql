-- One-time step for a database migrated before migrations/ was split by owner (issue #9).
-- Safe to run any number of times, and on a fresh database (it then does nothing).
--
-- Before the split both services applied one folder, tracked in `_sqlx_migrations`:
-- version 1 (players) and version 2 (games and ratings). Now the gateway applies
-- migrations/gateway/ tracked in `_sqlx_migrations`, and rating applies migrations/rating/
-- tracked in `_rating_migrations`. The files are unchanged (same versions, same
-- checksums); only version 2's bookkeeping row moves to the rating service's table.
-- Without this step the gateway refuses to start (version 2 applied but missing) and the
-- rating service tries to create its tables again.
-- Run it once, with every gateway and rating instance stopped:
--   psql "$FRONTIER_DATABASE_URL" -f migrations/adopt-split.sql
DO $$
BEGIN
    -- Nested: the inner query is planned only where the table exists.
    IF to_regclass('_sqlx_migrations') IS NOT NULL THEN
        IF EXISTS (
            SELECT 1 FROM _sqlx_migrations
            WHERE version = 2 AND description = 'games and ratings'
        ) THEN
            CREATE TABLE IF NOT EXISTS _rating_migrations (LIKE _sqlx_migrations INCLUDING ALL);
            INSERT INTO _rating_migrations
                SELECT * FROM _sqlx_migrations WHERE version = 2
                ON CONFLICT (version) DO NOTHING;
            DELETE FROM _sqlx_migrations WHERE version = 2;
        END IF;
    END IF;
END $$;
