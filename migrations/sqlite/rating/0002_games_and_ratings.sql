-- 0002: finished games, ratings and rating history (SQLite form of
-- migrations/rating/0002_games_and_ratings.sql, for `frontier dev`). Ids are 16-byte UUID
-- blobs (ordered as Postgres orders uuids); times are Unix milliseconds; the move record
-- is JSON text. Columns and keys are otherwise the same.
CREATE TABLE games (
    id                BLOB    PRIMARY KEY,
    variant           TEXT    NOT NULL CHECK (variant IN ('standard', 'hidden', 'atomic')),
    rated             BOOLEAN NOT NULL,
    initial_seconds   INTEGER,
    increment_seconds INTEGER,
    white_id          BLOB    NOT NULL,
    white_name        TEXT    NOT NULL,
    white_guest       BOOLEAN NOT NULL,
    white_bot         BOOLEAN NOT NULL,
    black_id          BLOB    NOT NULL,
    black_name        TEXT    NOT NULL,
    black_guest       BOOLEAN NOT NULL,
    black_bot         BOOLEAN NOT NULL,
    result            TEXT    NOT NULL,
    outcome           TEXT    NOT NULL,
    moves             TEXT    NOT NULL,
    created_at_ms     INTEGER NOT NULL,
    started_at_ms     INTEGER NOT NULL,
    ended_at_ms       INTEGER NOT NULL,
    start_fen         TEXT    NOT NULL,
    final_fen         TEXT    NOT NULL,
    initial_layout    TEXT    NOT NULL DEFAULT '',
    salt              TEXT    NOT NULL DEFAULT '',
    commitment        TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX games_white_recent ON games (white_id, ended_at_ms DESC, id DESC);
CREATE INDEX games_black_recent ON games (black_id, ended_at_ms DESC, id DESC);

-- One Glicko-2 rating per player per variant. SQLite serialises writers, so rating a game
-- (one transaction that starts by inserting the game) needs no row locks.
CREATE TABLE ratings (
    player_id        BLOB    NOT NULL,
    variant          TEXT    NOT NULL,
    rating           REAL    NOT NULL,
    rd               REAL    NOT NULL,
    volatility       REAL    NOT NULL,
    rated_games      INTEGER NOT NULL DEFAULT 0,
    last_rated_at_ms INTEGER,
    PRIMARY KEY (player_id, variant)
);

CREATE INDEX ratings_leaderboard ON ratings (variant, rating DESC);

CREATE TABLE rating_history (
    player_id BLOB    NOT NULL,
    variant   TEXT    NOT NULL,
    game_id   BLOB    NOT NULL REFERENCES games (id),
    rating    REAL    NOT NULL,
    rd        REAL    NOT NULL,
    at_ms     INTEGER NOT NULL,
    PRIMARY KEY (player_id, variant, game_id)
);

CREATE INDEX rating_history_by_time ON rating_history (player_id, variant, at_ms);
