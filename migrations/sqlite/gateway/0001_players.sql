-- 0001: players (SQLite form of migrations/gateway/0001_players.sql, for `frontier dev`).
-- Ids are 16-byte UUID blobs; times are Unix milliseconds.
CREATE TABLE players (
    id            BLOB    PRIMARY KEY,
    username      TEXT    NOT NULL,
    username_key  TEXT    NOT NULL,
    -- Argon2id PHC string; NULL for guests, who have no password.
    password_hash TEXT,
    guest         BOOLEAN NOT NULL,
    created_at_ms INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
    CHECK (guest OR password_hash IS NOT NULL)
);

CREATE UNIQUE INDEX players_registered_username_key
    ON players (username_key) WHERE NOT guest;
