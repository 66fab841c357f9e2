-- 0005: fair-play moderators (SQLite form of migrations/gateway/0005_moderators.sql, for
-- `frontier dev`): the role a registered player is granted by `frontier admin
-- grant-moderator NAME`, written into its tokens from its next sign-in. (SQLite cannot add
-- a table constraint to an existing table: the command grants the role to registered
-- players only, as on Postgres.)
ALTER TABLE players ADD COLUMN moderator BOOLEAN NOT NULL DEFAULT 0;
