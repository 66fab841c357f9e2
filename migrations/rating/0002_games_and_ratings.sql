-- 0002: finished games, ratings and rating history, written by the rating service.

-- Every finished game, once (the game id is the key: a redelivered game changes nothing).
-- Aborted and casual games are stored too; only rated games change ratings.
CREATE TABLE games (
    id                uuid        PRIMARY KEY,
    variant           text        NOT NULL CHECK (variant IN ('standard', 'hidden', 'atomic')),
    rated             boolean     NOT NULL,
    -- NULL initial_seconds: no clock.
    initial_seconds   integer,
    increment_seconds integer,
    white_id          uuid        NOT NULL,
    white_name        text        NOT NULL,
    white_guest       boolean     NOT NULL,
    white_bot         boolean     NOT NULL,
    black_id          uuid        NOT NULL,
    black_name        text        NOT NULL,
    black_guest       boolean     NOT NULL,
    black_bot         boolean     NOT NULL,
    -- 'white', 'black', 'draw' or 'aborted'; outcome is the full code ('white-checkmate').
    result            text        NOT NULL,
    outcome           text        NOT NULL,
    -- The move record: [{ply, uci, reveal_square, reveal_role, captured_square,
    -- captured_role, captured_was_hidden, captured_identity, at_ms}], as JSON.
    moves             jsonb       NOT NULL,
    created_at        timestamptz NOT NULL,
    started_at        timestamptz NOT NULL,
    ended_at          timestamptz NOT NULL,
    start_fen         text        NOT NULL,
    final_fen         text        NOT NULL,
    -- Hidden chess: the initial layout, its salt and the commitment shown at the start.
    initial_layout    text        NOT NULL DEFAULT '',
    salt              text        NOT NULL DEFAULT '',
    commitment        text        NOT NULL DEFAULT ''
);

-- A player's games, newest first, by either colour.
CREATE INDEX games_white_recent ON games (white_id, ended_at DESC, id DESC);
CREATE INDEX games_black_recent ON games (black_id, ended_at DESC, id DESC);

-- One Glicko-2 rating per player per variant. Rows are locked (SELECT … FOR UPDATE, in
-- player-id order) while a game is rated, so concurrent games of one player serialise.
CREATE TABLE ratings (
    player_id     uuid             NOT NULL,
    variant       text             NOT NULL,
    rating        double precision NOT NULL,
    rd            double precision NOT NULL,
    volatility    double precision NOT NULL,
    rated_games   integer          NOT NULL DEFAULT 0,
    -- When the last rated game ended: RD grows with the time since.
    last_rated_at timestamptz,
    PRIMARY KEY (player_id, variant)
);

CREATE INDEX ratings_leaderboard ON ratings (variant, rating DESC);

-- The rating after each rated game, for charts.
CREATE TABLE rating_history (
    player_id uuid             NOT NULL,
    variant   text             NOT NULL,
    game_id   uuid             NOT NULL REFERENCES games (id),
    rating    double precision NOT NULL,
    rd        double precision NOT NULL,
    at        timestamptz      NOT NULL,
    PRIMARY KEY (player_id, variant, game_id)
);

CREATE INDEX rating_history_by_time ON rating_history (player_id, variant, at);
