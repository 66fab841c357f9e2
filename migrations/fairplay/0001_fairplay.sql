-- 0001: the fair-play service's tables: analysed games, reports (the moderation queue),
-- marks and the moderators' decisions. Written and read by the fair-play service only.

-- One row per player per analysed rated game (the game id and player id are the key: a
-- redelivered game changes nothing). The moves' analysis is kept as the evidence a
-- moderator inspects.
CREATE TABLE fairplay_games (
    game_id            uuid             NOT NULL,
    player_id          uuid             NOT NULL,
    player_name        text             NOT NULL,
    variant            text             NOT NULL CHECK (variant IN ('standard', 'hidden', 'atomic')),
    color              text             NOT NULL CHECK (color IN ('white', 'black')),
    opponent_name      text             NOT NULL,
    -- 'white', 'black' or 'draw'.
    result             text             NOT NULL,
    -- The player's rating in the variant when the game was analysed.
    rating             double precision NOT NULL,
    ended_at           timestamptz      NOT NULL,
    analysed_at        timestamptz      NOT NULL,
    counted            integer          NOT NULL,
    top1               double precision NOT NULL,
    acpl               double precision NOT NULL,
    near_best          double precision NOT NULL,
    think_cv           double precision NOT NULL,
    fast_best_complex  double precision NOT NULL,
    slow_only_moves    double precision NOT NULL,
    score              double precision NOT NULL,
    -- The denominators of the time signals: moves with a think time that counts, complex
    -- positions among them, only-moves among them.
    timed              integer          NOT NULL,
    complex            integer          NOT NULL,
    only_moves         integer          NOT NULL,
    -- [{ply, played, best, loss_cp, think_ms, legal_moves, near_best, skipped, flagged}]
    moves              jsonb            NOT NULL,
    PRIMARY KEY (game_id, player_id)
);

-- A player's latest games in a variant (the aggregate's window).
CREATE INDEX fairplay_games_recent ON fairplay_games (player_id, variant, ended_at DESC, game_id DESC);

-- Reports: a player whose recent games crossed the thresholds. At most one open report
-- per player and variant; it is brought up to date as further games come in.
CREATE TABLE fairplay_reports (
    id               uuid             PRIMARY KEY,
    player_id        uuid             NOT NULL,
    player_name      text             NOT NULL,
    variant          text             NOT NULL CHECK (variant IN ('standard', 'hidden', 'atomic')),
    status           text             NOT NULL CHECK (status IN ('open', 'dismissed', 'marked')),
    score            double precision NOT NULL,
    -- [{code, value, threshold, detail}]
    reasons          jsonb            NOT NULL,
    -- The games the aggregate covered, newest first.
    game_ids         uuid[]           NOT NULL,
    rating           double precision NOT NULL,
    created_at       timestamptz      NOT NULL,
    updated_at       timestamptz      NOT NULL,
    decided_by_id    uuid,
    decided_by_name  text,
    decided_at       timestamptz,
    note             text             NOT NULL DEFAULT ''
);

CREATE UNIQUE INDEX fairplay_reports_one_open ON fairplay_reports (player_id, variant) WHERE status = 'open';
CREATE INDEX fairplay_reports_by_status ON fairplay_reports (status, created_at DESC, id DESC);
CREATE INDEX fairplay_reports_by_player ON fairplay_reports (player_id, variant, decided_at DESC);

-- Marked players: casual games only, hidden from the leaderboard.
CREATE TABLE fairplay_marks (
    player_id       uuid        PRIMARY KEY,
    player_name     text        NOT NULL,
    report_id       uuid        NOT NULL,
    marked_by_id    uuid        NOT NULL,
    marked_by_name  text        NOT NULL,
    marked_at       timestamptz NOT NULL,
    note            text        NOT NULL DEFAULT ''
);

-- Every decision, never updated or deleted: who decided what, when.
CREATE TABLE fairplay_decisions (
    id              bigserial   PRIMARY KEY,
    action          text        NOT NULL CHECK (action IN ('dismiss', 'mark', 'unmark')),
    report_id       uuid,
    player_id       uuid        NOT NULL,
    player_name     text        NOT NULL,
    moderator_id    uuid        NOT NULL,
    moderator_name  text        NOT NULL,
    note            text        NOT NULL DEFAULT '',
    at              timestamptz NOT NULL
);
