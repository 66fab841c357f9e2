-- 0004: preferences (SQLite form of migrations/gateway/0004_preferences.sql, for
-- `frontier dev`). The validated JSON object as text; times are Unix milliseconds.
CREATE TABLE player_preferences (
    player_id     BLOB    PRIMARY KEY REFERENCES players (id) ON DELETE CASCADE,
    preferences   TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
